"""The wall-clock cross-check of timed calls: what the checker's own clock saw against what the solution
process reported, with nothing the verdict needs computed in that process.

- The **null calls** (a call around nothing, made exactly like a timed call: flush, cover, events,
  synchronisation, the reply) are made right after the solution process starts and *before the solution
  is imported*, so the harness code that serves them is still the harness's: the solution cannot pad
  them to make the overhead subtracted from every timed call larger. They are made at the smallest and
  the largest cover (`NullCalibration`); the cover of a timed call lies between, and its null cost is
  interpolated.
- Per timed call: outside = the round trip - the null cost at its cover - the host-load wait of the
  solution's main thread (`host_times.py`: run-queue wait while other processes held the cores).
- Verdict on the medians: `ok` when outside <= FACTOR x reported + SLACK_MS; otherwise `host_bound` when
  the solution process was on a core for longer than the launch cover plus most of the excess (its own
  Python and launches outlasted the cover, so the device waited for the host: honest, but the latency
  reported is then the checker's figure, host time included); otherwise `mismatch` (the process slept
  while the clock ran: device work outside the timed window, or a forged time).

Pure functions over numbers; no torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from workbench.harness.checker.host_times import HostDelta

# Measured on an H200 over the 11 experts' 35 workloads (docs/performance.md, "The wall-clock cross-check"):
# outside - reported was -0.31 to +0.50 ms with the null calls made before the import, whatever the
# call's length (the harness's own per-call host work and the device's wake-up, not the kernel's).
OUTSIDE_FACTOR = 1.2
OUTSIDE_SLACK_MS = 0.6
HOST_SHARE = 0.8  # beyond the cover, the process's CPU time must cover this share of the excess (host-bound)
NULL_CALLS = 5  # null calls per cover and method


@dataclass(frozen=True)
class NullCalibration:
    """Median null round trips (ms) at the smallest and largest cover, for one workload and method."""

    low_cover_ms: float
    low_ms: float
    high_cover_ms: float
    high_ms: float

    def at(self, cover_ms: float) -> float:
        if self.high_cover_ms <= self.low_cover_ms:
            return self.low_ms
        share = min(1.0, max(0.0, (cover_ms - self.low_cover_ms) / (self.high_cover_ms - self.low_cover_ms)))
        return self.low_ms + share * (self.high_ms - self.low_ms)


@dataclass(frozen=True)
class CrossCheck:
    verdict: Literal["ok", "host_bound", "mismatch"]
    outside_ms: float  # median over the calls of round trip - null - host-load wait
    per_call_ms: list[float]  # the same per call (the latency when host-bound)
    load_wait_ms: float  # median host-load wait per call that was forgiven
    host_cpu_ms: float | None  # median CPU time of the solution process per call (None: unreadable)

    def detail(self, reported_ms: float) -> str:
        cpu = f"{self.host_cpu_ms:.3f} ms" if self.host_cpu_ms is not None else "unknown"
        return (
            f"the solution process reported a median of {reported_ms:.3f} ms per call, but the checker's clock saw "
            f"{self.outside_ms:.3f} ms (host load {self.load_wait_ms:.3f} ms already taken off; the process's CPU "
            f"time {cpu} per call)"
        )


def cross_check(
    reported_ms: float, walls_ms: Sequence[float], null_ms: float, hosts: Sequence[HostDelta | None], cover_ms: float
) -> CrossCheck:
    """The verdict on timed calls made behind a cover of `cover_ms`, whose round trips were `walls_ms` and
    host times `hosts`."""
    if not walls_ms:
        raise ValueError("no timed call to cross-check")
    waits = [h.load_wait_ms if h is not None else 0.0 for h in hosts] or [0.0] * len(walls_ms)
    per_call = [wall - null_ms - wait for wall, wait in zip(walls_ms, waits, strict=True)]
    outside = statistics.median(per_call)
    known = [h.cpu_ms for h in hosts if h is not None]
    cpu = statistics.median(known) if known and len(known) == len(walls_ms) else None
    wait = statistics.median(waits)
    if outside <= OUTSIDE_FACTOR * reported_ms + OUTSIDE_SLACK_MS:
        return CrossCheck("ok", outside, per_call, wait, cpu)
    excess = outside - reported_ms
    if cpu is not None and cpu >= cover_ms + HOST_SHARE * excess:
        return CrossCheck("host_bound", outside, per_call, wait, cpu)
    return CrossCheck("mismatch", outside, per_call, wait, cpu)
