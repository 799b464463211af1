# Cheat (finding 6, ill-typed replies): report a latency that is not a number of milliseconds (NaN,
# negative or a string) and a launch count as a float, so that the checker's arithmetic on them fails.
import gc


def _tamper() -> None:
    for obj in gc.get_objects():
        if type(obj).__name__ == "Host" and hasattr(obj, "channel"):
            channel = obj.channel
            send = channel.send

            def forged(message, tensors=(), _send=send):
                if isinstance(message, dict) and "ms" in message:
                    message = {**message, "ms": float("nan"), "launches": 1.5}
                return _send(message, tensors)

            channel.send = forged


_tamper()


def run(G, steps):
    return honest_run(G, steps)
