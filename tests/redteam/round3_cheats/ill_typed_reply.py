# Cheat (finding 6, ill-typed replies): past the static policy, find the solution host's channel and
# rewrite every call's reply with the right keys and wrong types (a shape that is an int, aliases as
# a dict), hoping the checker trips over them and blames the workbench (harness_error) while the
# workload row still says passed.
import gc


def _tamper() -> None:
    gc.unfreeze()  # the host froze its own objects at init: get_objects lists only what is not frozen
    for obj in gc.get_objects():
        if type(obj).__name__ == "Host" and hasattr(obj, "channel"):
            channel = obj.channel
            send = channel.send

            def forged(message, tensors=(), _send=send):
                if isinstance(message, dict) and "outputs" in message and "ms" in message:
                    message = dict(message)
                    message["outputs"] = [{**o, "shape": 5, "aliases": {"G": 1}} for o in message["outputs"]]
                return _send(message, tensors)

            channel.send = forged


_tamper()


def run(G, steps):
    return honest_run(G, steps)
