"""When the garbage collector's full collections run while the workbench is open: when the user is idle.

A full collection walks every object the process holds: with a 2,000-event session open, 60-140 ms on a
2-core machine (more under load), and Python starts one whenever enough objects have survived the young
collections, which is to say in the middle of whatever key was pressed then (a move between revisions
measured 100-470 ms when one fell in it). While a `FullCollections` runs, automatic full collections are
off; the young generations are collected as usual, and a full collection that would have become due runs
once the app has been idle for `IDLE_S`: no key or mouse event and no worker running (reading a session,
its code), or at the latest `MAX_DEFER_S` after it became due (a live session's polling keeps a worker
running every half second; garbage is never left to grow for long). The objects made at start-up are frozen
out of every collection (`freeze_startup_heap`). The process's thresholds are restored when the app stops.
"""

from __future__ import annotations

import gc
import time

IDLE_S = 0.5  # no input for this long: a due full collection runs
MAX_DEFER_S = 10.0  # a due full collection runs after this long whatever the app is doing
CHECK_S = 0.25  # how often `tick` is called
NEVER = 1 << 30  # a threshold no count of young collections reaches


def freeze_startup_heap() -> None:
    """Move what the process has allocated so far (the imports: some 70,000 objects that live as long as it
    does) out of the garbage collector's reach, once per process: the entry point calls it once the app is built
    (`run_app`, and the benchmark as it starts the app); a process whose heap is frozen already is left as it is
    (a test run's: asking costs a walk of every frozen object, so the app itself never asks). Otherwise
    every full collection walks them all again: the start triggers one, opening a 2,000-event session one or
    two (measured: 150-380 ms of CPU per open on a 2-core machine, 45-135 ms with the freeze)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()


class FullCollections:
    """Full collections deferred to idle moments, from `start()` to `stop()`."""

    def __init__(self) -> None:
        self.last_activity = time.monotonic()
        self.collections = 0  # full collections run by `tick` (tests read it)
        self.due_since: float | None = None  # when `tick` first saw a full collection due
        self._saved: tuple[int, int, int] | None = None

    def start(self) -> None:
        if self._saved is None:
            self._saved = gc.get_threshold()
            young, middle, _ = self._saved
            gc.set_threshold(young, middle, NEVER)

    def stop(self) -> None:
        if self._saved is not None:
            if gc.get_threshold()[2] == NEVER:  # (unless something else set them meanwhile)
                gc.set_threshold(*self._saved)
            self._saved = None

    def activity(self) -> None:
        """The user or the app is doing something (a key, a worker): no full collection for `IDLE_S`."""
        self.last_activity = time.monotonic()

    @property
    def due(self) -> bool:
        """As many middle-generation collections as make a full one due by the process's own threshold."""
        return self._saved is not None and gc.get_count()[2] >= self._saved[2]

    def tick(self, busy: bool) -> None:
        """Every `CHECK_S` (`busy`: a worker runs): a due full collection once idle for `IDLE_S`, or once it
        has been due for `MAX_DEFER_S`."""
        now = time.monotonic()
        if busy:
            self.activity()
        if not self.due:
            self.due_since = None
            return
        if self.due_since is None:
            self.due_since = now
        if now - self.last_activity >= IDLE_S or now - self.due_since >= MAX_DEFER_S:
            gc.collect()
            self.collections += 1
            self.due_since = None
