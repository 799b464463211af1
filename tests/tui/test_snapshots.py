"""Snapshots of the main screens at 120x40 with deterministic data (the shipped example; no clocks)."""

from __future__ import annotations

from .conftest import SIZE, settle


def test_tasks_screen(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=ready)


def test_sessions_screen(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=ready)


def test_session_view(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("up", "d")  # revision 3 and its diff to revision 2
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=ready)


def test_session_view_narrow(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("left_curly_bracket", *["right_square_bracket"] * 8, "e")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=ready)
