"""What a child process of the workbench runs between fork and exec (`preexec_fn`).

Imports only the standard library, so that the parent side (evaluate, session drivers, the agent's
profile tool) can start children without importing torch.
"""

from __future__ import annotations

import ctypes
import signal


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (call in a child before exec)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
