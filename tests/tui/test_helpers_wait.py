"""The TUI tests' idle wait (`helpers_wait`): it returns only once nothing is due within the window, so that a
test sees what a key set off, including a screen update or timer that runs a few milliseconds later."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any

import pytest
from textual.app import App

from .helpers_wait import WINDOW, quiet_wait_for_idle


async def textuals(min_sleep: float, max_sleep: float) -> None:
    raise AssertionError("the loop can be read: Textual's own wait is not needed")


no_app: ContextVar[App[Any]] = ContextVar("no_app")


@pytest.mark.asyncio
async def test_work_due_within_the_window_has_run_when_the_wait_ends() -> None:
    ran: list[str] = []
    loop = asyncio.get_running_loop()
    loop.call_later(WINDOW / 2, lambda: loop.call_later(WINDOW / 2, ran.append, "chained"))  # a timer a timer set
    loop.call_soon(ran.append, "ready")
    await quiet_wait_for_idle(textuals, no_app)(0, 1)
    assert ran == ["ready", "chained"]


@pytest.mark.asyncio
async def test_work_due_after_the_window_is_not_waited_for() -> None:
    ran: list[str] = []
    handle = asyncio.get_running_loop().call_later(0.5, ran.append, "later")
    await quiet_wait_for_idle(textuals, no_app)(0, 1)
    handle.cancel()
    assert ran == []
