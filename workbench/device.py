"""Device names, in one place: the syntax (`cpu`, `cuda`, `cuda:N`), and "auto" resolved on this machine."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

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


# Counts the CUDA devices this process would see (CUDA_VISIBLE_DEVICES applies), in a child process: the
# caller (the CLI, a runner, the workbench) never imports torch nor opens the driver.
PROBE = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
NVIDIA_NODES = ("/dev/nvidiactl", "/proc/driver/nvidia")


def _probe(code: str, *args: str) -> int | None:
    """The integer a torch snippet prints in a child process (the last line of its output); None at once on a
    machine with no NVIDIA driver loaded, and None where the child prints no integer (no such device, torch
    failing)."""
    if not any(Path(node).exists() for node in NVIDIA_NODES):
        return None
    probe = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, check=False)
    try:
        return int(probe.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


@functools.cache  # one probe per process: the devices a process may use do not change while it runs
def cuda_device_count() -> int:
    """CUDA devices usable here; 0 at once on a machine with no NVIDIA driver loaded. Asked once per
    process (every evaluation resolves its device: a probe each time would add a torch import to each)."""
    return _probe(PROBE) or 0


# The total memory of one CUDA device in bytes (CUDA_VISIBLE_DEVICES applies), in a child process as above.
MEMORY_PROBE = "import sys, torch; print(torch.cuda.get_device_properties(int(sys.argv[1])).total_memory)"


def device_index(device: str) -> int:
    """The CUDA device a name means: "cuda" is device 0, "cuda:N" device N."""
    return int(device.partition(":")[2] or 0)


@functools.cache  # one probe per device and process: a device's memory does not change while the process runs
def cuda_total_memory(index: int) -> int | None:
    """Bytes of memory of CUDA device `index`, as torch reports it; None where it cannot be read (no NVIDIA
    driver, no such device, torch failing): the caller then checks nothing."""
    return _probe(MEMORY_PROBE, str(index))


def resolve_device(device: str, count: Callable[[], int] = cuda_device_count) -> str:
    """ "auto" -> cuda when a GPU is present, else cpu; a cuda name needs a GPU here. `count`: how the GPUs
    are counted (a child process by default)."""
    if device == "auto":
        return "cuda" if count() > 0 else "cpu"
    check_device_name(device)
    if device.startswith("cuda"):
        available = count()
        if available == 0:
            raise UsageError(
                f"device {device!r} was asked for but no CUDA device is available here; "
                "use --device cpu (smoke workloads under the Triton interpreter, no timing)"
            )
        index = device_index(device)
        if index >= available:
            raise UsageError(
                f"device {device!r} was asked for but this machine has {available} CUDA device(s): cuda:0..cuda:{available - 1}"
            )
    return device
