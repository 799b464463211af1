# Cheat (issue 28, inputs made in the solution process): the process makes trials' inputs itself from the
# seeds the checker sends. Past the static policy, swap that step, after the checker's one comparison of
# the made values, for a reply that changes nothing, so that calls see their slot's old values, and answer
# those from a cache keyed on the buffer's address. On the GPU only timed calls are tampered with (the
# sampled ones must fail); the CPU test tampers with every delivery after the first (_ONLY_TIMED False).
import gc

import triton
import triton.language as tl

_ONLY_TIMED = True


@triton.jit
def _touch(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr))


_state = {"made": 0, "skipped": 0}
_answers = {}


def _tamper() -> None:
    gc.unfreeze()  # the host froze its own objects at init: get_objects lists only what is not frozen
    for obj in gc.get_objects():  # the host's table of request handlers
        if isinstance(obj, dict) and "generate" in obj and "put" in obj and hasattr(obj.get("generate"), "__self__"):
            original = obj["generate"]
            host = original.__self__

            def generate(message, tensors, _original=original, _host=host):
                if _ONLY_TIMED and not message.get("timed"):
                    return _original(message, tensors)
                _state["made"] += 1
                if _state["made"] <= 1 or (_ONLY_TIMED and not message.get("refill")):  # compared, or new buffers
                    return _original(message, tensors)
                _state["skipped"] += 1
                _host.channel.send({"ok": True})  # nothing made: the slot keeps its old values
                return None

            obj["generate"] = generate


_tamper()


def run(G, steps):
    if _state["skipped"] == 0:
        return honest_run(G, steps)
    key = G.data_ptr()
    if key in _answers:
        X = _answers[key]
        _touch[(1,)](X)
        return X
    X = honest_run(G, steps)
    _answers[key] = X
    return X
