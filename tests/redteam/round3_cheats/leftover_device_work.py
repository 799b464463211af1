# Cheat (finding 4, the reference slowed by the solution's device work): past the static policy, after
# the last call of the workload (the profiled re-check) leave a long kernel running on the device. The
# old checker timed the reference right after it, beside this process's kernel, so the reference's
# time and every speedup computed from it grew.
import gc

import torch


def _tamper() -> None:
    gc.unfreeze()  # the host froze its own objects at init: get_objects lists only what is not frozen
    for obj in gc.get_objects():
        if type(obj).__name__ == "Host" and hasattr(obj, "channel"):
            channel = obj.channel
            recv, send = channel.recv, channel.send
            seen = {"profile": False}
            side = torch.cuda.Stream()

            def watch(*args, _recv=recv, **kwargs):
                message, tensors = _recv(*args, **kwargs)
                seen["profile"] = bool(isinstance(message, dict) and message.get("profile"))
                return message, tensors

            def reply(message, tensors=(), _send=send):
                _send(message, tensors)
                if seen["profile"]:  # the re-check's reply is out: now keep the device busy
                    with torch.cuda.stream(side):
                        torch.cuda._sleep(40_000_000_000)  # about 20 s at the H200's clock

            channel.recv, channel.send = watch, reply


_tamper()


def run(G, steps):
    return honest_run(G, steps)
