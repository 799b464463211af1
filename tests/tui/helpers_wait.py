"""Textual's Pilot waits for the app to go idle after every key and pause (`textual._wait.wait_for_idle`) by
sleeping in 20 ms windows until one passes with under 1 ms of the process's CPU: at least one window per call,
two after a key that repaints (the screen's update timer runs up to 17 ms later), so some 100 ms a key and most
of a TUI test's wall time spent asleep with nothing left to do (measured: 91 windows, 2.0 s of the 2.2 s of
test_filter_sessions).

`quiet_wait_for_idle` makes the same wait end on the same condition without watching it: it returns once nothing
can run in the coming window, that is when the event loop has no callback ready, no timer due within the window
(the screen's update, an interval, an animation) and the app no worker unfinished. Until then it sleeps to the
next due timer (or yields to the ready callbacks) and looks again; while a worker runs (a thread, whose work the
loop cannot see) it falls back to Textual's CPU-time windows, looking every 2 ms whether the workers have ended.
Reading the loop's queues needs asyncio's `BaseEventLoop` internals: on a loop without them Textual's own
function runs.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from time import monotonic, process_time
from typing import Any

from textual.app import App

WaitForIdle = Callable[[float, float], Awaitable[None]]

WINDOW = 1 / 50  # textual._wait.SLEEP_GRANULARITY: the span that has to stay quiet
WINDOW_CPU = WINDOW / 20  # textual._wait.SLEEP_IDLE: a window with less CPU than this was idle


def _next_due(loop: asyncio.AbstractEventLoop, horizon: float) -> float | None:
    """Seconds until the first callback that will run within `horizon` (0: one is ready); None: none will."""
    if loop._ready:  # type: ignore[attr-defined]
        return 0.0
    now = loop.time()
    first = min((handle.when() for handle in loop._scheduled if not handle.cancelled()), default=None)  # type: ignore[attr-defined]
    return None if first is None or first - now > horizon else max(0.0, first - now)


def _inspectable(loop: asyncio.AbstractEventLoop) -> bool:
    return isinstance(getattr(loop, "_ready", None), collections.deque) and isinstance(getattr(loop, "_scheduled", None), list)


def quiet_wait_for_idle(textuals: WaitForIdle, active_app: ContextVar[App[Any]]) -> WaitForIdle:
    """`textuals` (Textual's `wait_for_idle`: same arguments, same 1 s limit) ending as soon as the app under test
    (`active_app`, Textual's context variable) is quiet for the coming `max(WINDOW, min_sleep)`."""

    def workers_running() -> bool:
        app = active_app.get(None)
        return app is not None and any(not worker.is_finished for worker in app.workers)

    async def wait_for_idle(min_sleep: float = WINDOW, max_sleep: float = 1) -> None:
        loop = asyncio.get_running_loop()
        if not _inspectable(loop):
            await textuals(min_sleep, max_sleep)
            return
        start = monotonic()
        horizon = max(WINDOW, min_sleep)
        while monotonic() - start < max_sleep:
            if workers_running():  # Textual's test, a window with (almost) no CPU used, cut short if they end
                cpu, window_start = process_time(), monotonic()
                while workers_running() and monotonic() - window_start < WINDOW:
                    await asyncio.sleep(WINDOW / 10)
                if workers_running() and monotonic() - start > min_sleep and process_time() - cpu < WINDOW_CPU:
                    return
                continue
            delay = _next_due(loop, horizon)
            if delay is None:
                return
            await asyncio.sleep(delay)

    return wait_for_idle
