"""The GPU scripts' shared timer: median milliseconds of a call with CUDA events, after warm-up, the L2 flushed by
a 256 MB write before every call (the method of docs/performance.md). Import it from a script run as
``python3 scripts/NAME.py`` (the script's folder is on ``sys.path``): ``from gpu_timing import median_ms``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

FLUSH_BYTES = 256 * 2**20  # well above the L2 of an H100 (50 MB) or an H200 (60 MB)


def median_ms(fn: Callable[[], Any], calls: int = 20, warmup: int = 3) -> float:
    """Median of ``calls`` timed calls of ``fn`` (ms), each after a write of ``FLUSH_BYTES`` that evicts the L2."""
    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]
