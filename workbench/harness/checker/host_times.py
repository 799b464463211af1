"""The solution process's host time, read by the checker from /proc (nothing the solution reports).

The wall-clock cross-check of a timed call (`crosscheck.py`) must tell three things apart when the
checker's clock sees more than the device time the solution process reports:
- host load: the process was ready to run but waited for a core (other evaluations share the host);
  read as the main thread's run-queue wait (`/proc/PID/task/TID/schedstat`, second field), less the
  CPU time of the process's own other threads in the same interval (a solution cannot make its main
  thread wait by keeping its own threads busy and have that wait forgiven);
- host-bound work: the process was on a core (its threads' CPU time): its own Python and launches;
- neither: the process slept while the wall clock ran, which is device work outside the timed window
  or a forged time.

Linux only; where schedstat cannot be read, `sample` returns None and the cross-check forgives nothing.
Imports only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class HostSample:
    """Cumulative nanoseconds of one process tree at one moment."""

    cpu_ns: int  # every thread's time on a core
    main_cpu_ns: int  # the main threads' time on a core
    main_wait_ns: int  # the main threads' time ready to run but not running


@dataclass(frozen=True)
class HostDelta:
    """What the host did during one call, in milliseconds."""

    cpu_ms: float  # the process tree's CPU time
    load_wait_ms: float  # run-queue wait of the main threads not explained by the process's own other threads


def descendants(pid: int) -> list[int]:
    """pid and every process below it (bubblewrap's init and the interpreter under it)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            for task in (PROC / str(current) / "task").iterdir():
                children = (task / "children").read_text().split()
                queue.extend(int(c) for c in children)
        except OSError:
            continue
    return found


def _schedstat(path: Path) -> tuple[int, int]:
    fields = path.read_text().split()
    return int(fields[0]), int(fields[1])


def sample(pids: list[int]) -> HostSample | None:
    """The tree's cumulative times now, or None where /proc has no schedstat for them."""
    cpu = main_cpu = main_wait = 0
    try:
        for pid in pids:
            for task in (PROC / str(pid) / "task").iterdir():
                run, wait = _schedstat(task / "schedstat")
                cpu += run
                if task.name == str(pid):
                    main_cpu += run
                    main_wait += wait
    except (OSError, ValueError, IndexError):
        return None
    return HostSample(cpu, main_cpu, main_wait)


def delta(before: HostSample | None, after: HostSample | None) -> HostDelta | None:
    if before is None or after is None:
        return None
    cpu = after.cpu_ns - before.cpu_ns
    own_other = cpu - (after.main_cpu_ns - before.main_cpu_ns)
    wait = max(0, (after.main_wait_ns - before.main_wait_ns) - own_other)
    return HostDelta(cpu_ms=cpu / 1e6, load_wait_ms=wait / 1e6)
