# Cheat (finding 3, the cross-check calibrated by the solution): past the static policy, pad the null
# calls the checker makes to calibrate its wall clock, and report a third of the real device time.
# The old checker made its null calls after timing, served by this process: the padding raised the
# overhead it subtracted from every timed call and hid the forged time.
import gc
import time


def _tamper() -> None:
    gc.unfreeze()  # the host froze its own objects at init: get_objects lists only what is not frozen
    for obj in gc.get_objects():
        if type(obj).__name__ == "Host" and hasattr(obj, "channel"):
            send = obj.channel.send

            def forged(message, tensors=(), _send=send):
                if isinstance(message, dict) and "ms" in message:
                    if message.get("launches"):
                        message = {**message, "ms": message["ms"] / 3}
                    else:  # a null call's reply: late, so the checker subtracts more from every call
                        time.sleep(0.05)
                return _send(message, tensors)

            obj.channel.send = forged


_tamper()


def run(G, steps):
    return honest_run(G, steps)
