# Honest: a global that memoises a property of the device (not of any input).
_DEVICE_KIND = None


def _device_kind(device):
    global _DEVICE_KIND
    if _DEVICE_KIND is None:
        _DEVICE_KIND = device.type
    return _DEVICE_KIND


def run(G, steps):
    _device_kind(G.device)
    return honest_run(G, steps)
