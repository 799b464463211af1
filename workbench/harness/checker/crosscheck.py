"""The wall-clock cross-check of timed calls: what the checker's own clock saw against what the solution
process reported, with nothing the verdict needs computed in that process.

Two questions are kept apart (docs/harness.md, "Hidden device work and host time"):
- **Device work outside the window** is a violation, and it is measured on the device, not here: every
  call records an event on each stream the solution can reach right after its end event
  (solution/stream_tails.py), and the checker refuses a workload whose timed calls left work running
  (`HIDDEN_SLACK_MS`; checker/process.py `hidden_work`). No host clock enters it, so load cannot flip it.
- **The checker's wall clock** decides no verdict: it cannot tell the solution's host time, another
  process's work on a shared device and a figure forged by a process that escaped the guard apart, and
  all three grow with load. Where it sees more than the device time reported, the latency that counts is
  the checker's own figure (a forged time gains nothing), the device's median is reported beside it, and
  the note says what the clock saw: `host_bound` when the solution process was on a core for the excess
  (its Python and launches outlasted the launch cover), `unexplained` otherwise (the process slept: a
  device shared with other processes, or a forged figure).

How `outside` is computed:
- The **null calls** (a call around nothing, made exactly like a timed call: flush, cover, events,
  synchronisation, the reply) are made right after the solution process starts and *before the solution
  is imported*, so the harness code that serves them is still the harness's: the solution cannot pad
  them to make the overhead subtracted from every timed call larger. They are made at the smallest and
  the largest cover (`NullCalibration`); the cover of a timed call lies between, and its null cost is
  interpolated.
- Per timed call: outside = the round trip - the null cost at its cover - the host-load wait of the
  solution's main thread (`host_times.py`: run-queue wait while other processes held the cores).
- On the medians: `ok` when outside <= FACTOR x reported + SLACK_MS.

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
HIDDEN_SLACK_MS = 0.05  # device-side ordering jitter between idle streams' events and the probe (stream_tails.py)


@dataclass(frozen=True)
class NullCalibration:
    """Median null round trips (ms) at the smallest and largest cover, for one workload and method."""

    low_cover_ms: float
    low_ms: float
    high_cover_ms: float
    high_ms: float
    # the process's own time from reading a null call to replying, at each cover (the notes' diagnosis only)
    low_served_ms: float = 0.0
    high_served_ms: float = 0.0

    def _share(self, cover_ms: float) -> float:
        if self.high_cover_ms <= self.low_cover_ms:
            return 0.0
        return min(1.0, max(0.0, (cover_ms - self.low_cover_ms) / (self.high_cover_ms - self.low_cover_ms)))

    def at(self, cover_ms: float) -> float:
        return self.low_ms + self._share(cover_ms) * (self.high_ms - self.low_ms)

    def served_at(self, cover_ms: float) -> float:
        return self.low_served_ms + self._share(cover_ms) * (self.high_served_ms - self.low_served_ms)


@dataclass(frozen=True)
class CrossCheck:
    verdict: Literal["ok", "host_bound", "unexplained"]
    outside_ms: float  # median over the calls of round trip - null - host-load wait
    per_call_ms: list[float]  # the same per call (the latency when host-bound)
    load_wait_ms: float  # median host-load wait per call that was forgiven
    host_cpu_ms: float | None  # median CPU time of the solution process per call (None: unreadable)
    # the process's own median time from reading a timed call to replying, and a null call's (as it says: notes only)
    served_ms: float | None = None
    null_served_ms: float | None = None

    def note(self, reported_ms: float) -> str:
        """The report's note where the checker's figure is the latency."""
        cpu = f"{self.host_cpu_ms:.3g} ms" if self.host_cpu_ms is not None else "unknown"
        why = (
            "host-bound: the solution's Python and launches outlasted the launch cover"
            if self.verdict == "host_bound"
            else "the process waited while the clock ran (a device shared with other work, or a figure not to be trusted)"
        )
        served = ""
        if self.served_ms is not None and self.null_served_ms is not None:
            served = (
                f"; the process says it served a call in {self.served_ms:.3g} ms from request to reply, "
                f"a null call in {self.null_served_ms:.3g} ms"
            )
        return (
            f"{why}; the device time was {reported_ms:.4g} ms per call, the checker's clock saw {self.outside_ms:.4g} ms "
            f"(host load {self.load_wait_ms:.3g} ms taken off; the process's CPU time {cpu} per call{served}): "
            "the latency is the checker's figure"
        )


def cross_check(
    reported_ms: float,
    walls_ms: Sequence[float],
    null_ms: float,
    hosts: Sequence[HostDelta | None],
    cover_ms: float,
    served: tuple[Sequence[float], float] | None = None,
) -> CrossCheck:
    """The verdict on timed calls made behind a cover of `cover_ms`, whose round trips were `walls_ms` and
    host times `hosts`. `served`: the process's own times from request to reply per call and a null call's, for
    the note only (what the process says decides nothing)."""
    if not walls_ms:
        raise ValueError("no timed call to cross-check")
    waits = [h.load_wait_ms if h is not None else 0.0 for h in hosts] or [0.0] * len(walls_ms)
    per_call = [wall - null_ms - wait for wall, wait in zip(walls_ms, waits, strict=True)]
    outside = statistics.median(per_call)
    known = [h.cpu_ms for h in hosts if h is not None]
    cpu = statistics.median(known) if known and len(known) == len(walls_ms) else None
    wait = statistics.median(waits)
    said = (statistics.median(served[0]), served[1]) if served is not None and served[0] else (None, None)
    if outside <= OUTSIDE_FACTOR * reported_ms + OUTSIDE_SLACK_MS:
        return CrossCheck("ok", outside, per_call, wait, cpu, *said)
    excess = outside - reported_ms
    if cpu is not None and cpu >= cover_ms + HOST_SHARE * excess:
        return CrossCheck("host_bound", outside, per_call, wait, cpu, *said)
    return CrossCheck("unexplained", outside, per_call, wait, cpu, *said)
