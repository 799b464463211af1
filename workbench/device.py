"""Device names, in one place: the syntax (`cpu`, `cuda`, `cuda:N`), and "auto" resolved on this machine."""

from __future__ import annotations

import re

from workbench.errors import UsageError

DEVICE_PATTERN = re.compile(r"^(cpu|cuda(:\d+)?)$")
DEVICE_HELP = "cpu, cuda or cuda:N"


def bad_device_message(device: str) -> str:
    return f"unknown device {device!r}; expected {DEVICE_HELP}"


def check_device_name(device: str) -> str:
    """The name, if it is one (no GPU needed: a session may be created here and run elsewhere)."""
    if not DEVICE_PATTERN.match(device):
        raise UsageError(bad_device_message(device))
    return device


def resolve_device(device: str) -> str:
    """ "auto" -> cuda when a GPU is present, else cpu; a cuda name needs a GPU here."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    check_device_name(device)
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise UsageError(
                f"device {device!r} was asked for but no CUDA device is available here; "
                "use --device cpu (smoke workloads under the Triton interpreter, no timing)"
            )
        index = int(device.partition(":")[2] or 0)
        count = torch.cuda.device_count()
        if index >= count:
            raise UsageError(
                f"device {device!r} was asked for but this machine has {count} CUDA device(s): cuda:0..cuda:{count - 1}"
            )
    return device
