"""The review screen on the shipped judged example (tests/tui/conftest.py's roots, with that example added):
selecting a citation moves the highlight and the scroll on both sides, the expert side shows the evidence
function of the citation's criterion, a shipped example stays read-only, a change of score writes a review
event and the shown score changes, the judge runs in a subprocess against a fake model server; snapshots."""

from __future__ import annotations

import shutil
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from llm.fake_servers import FakeModelServer, ModelTurn
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Static

from workbench import paths
from workbench.judge.evidence import definitions
from workbench.judge.testing import EXAMPLE_ID, example_replies
from workbench.session.eventlog import read_log
from workbench.session.events import JudgeVerdict, Review
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.review import CONTEXT_LINES, HighlightedCode, JudgeDialog, ReviewDialog, ReviewScreen

from .conftest import SIZE, settle

SHIPPED = paths.REPO_ROOT / "sessions" / "examples" / EXAMPLE_ID
EXPERT = (paths.REPO_ROOT / "tasks" / "muon_orthogonalize" / "expert.py").read_text()


@pytest.fixture
def shipped(context: WorkbenchContext) -> SessionRef:
    """The judged example among the app's (read-only) examples."""
    assert context.examples_dir is not None
    shutil.copytree(SHIPPED, context.examples_dir / EXAMPLE_ID)
    return SessionRef(EXAMPLE_ID, context.examples_dir / EXAMPLE_ID, read_only=True)


@pytest.fixture
def writable(context: WorkbenchContext) -> SessionRef:
    """A copy of the judged example in the sessions root (judging and reviewing write to it)."""
    shutil.copytree(SHIPPED, context.sessions_dir / EXAMPLE_ID)
    return SessionRef(EXAMPLE_ID, context.sessions_dir / EXAMPLE_ID)


async def open_review(pilot: Pilot[None], ref: SessionRef, rev: int | None = None) -> ReviewScreen:
    await settle(pilot)
    pilot.app.push_screen(ReviewScreen(ref, rev))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen) and screen.material is not None
    return screen


def panes(screen: ReviewScreen) -> tuple[HighlightedCode, HighlightedCode]:
    return screen.query_one("#candidate", HighlightedCode), screen.query_one("#expert", HighlightedCode)


def option_text(screen: ReviewScreen, option_id: str) -> str:
    return str(screen.query_one("#citations", OptionList).get_option(option_id).prompt.plain)  # type: ignore[union-attr]


def top_for(view: HighlightedCode, line: int) -> int:
    """Where the view scrolls to show `line` with its context above (the end of the file clamps it)."""
    return min(max(0, line - 1 - CONTEXT_LINES), view.max_scroll_y)


def visible(view: HighlightedCode) -> list[str]:
    top = view.scroll_offset.y
    return view.plain_lines()[top : top + view.scrollable_content_region.height]


async def wait_until(pilot: Pilot[None], condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await pilot.pause(0.1)


@pytest.mark.asyncio
async def test_selecting_a_citation_moves_the_highlight_and_the_scroll_on_both_sides(
    make_app: Callable[[], WorkbenchApp], shipped: SessionRef
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(pilot, shipped)
        material = screen.material
        assert material is not None and material.rev == 4 and material.judgement is not None
        verdict = material.judgement.verdict
        assert verdict is not None
        candidate, expert = panes(screen)
        assert candidate.text == material.text and expert.text == EXPERT
        # it opens on the first citation: L1's loop, and the evidence of L1.c.square_side (_segment first)
        first = verdict.levels["L1"].citations[0]
        assert screen.selected == "cit-L1-0"
        assert candidate.highlighted == set(range(first.start_line, first.end_line + 1))
        assert candidate.scroll_offset.y == top_for(candidate, first.start_line) > 0
        segment = definitions(EXPERT)["_segment"]
        assert set(range(segment.start_line, segment.end_line + 1)) <= expert.highlighted
        assert expert.scroll_offset.y == top_for(expert, segment.start_line) > 0
        assert any("def _segment(" in line for line in visible(expert))
        assert any("for a, b, c in COEFFS:" in line for line in visible(candidate))
        assert "expert.py · _segment, square, _launch_apply (evidence of L1.c.square_side)" in str(
            screen.query_one("#expert-title", Static).content
        )

        await pilot.press("down", "down")  # past L2's heading to its first citation: the fused epilogue
        await settle(pilot)
        assert screen.selected == "cit-L2-0"
        epilogue = verdict.levels["L2"].citations[0]
        assert epilogue.criterion == "L2.c.symmetric_gemm_add"
        assert candidate.highlighted == set(range(epilogue.start_line, epilogue.end_line + 1))
        assert candidate.scroll_offset.y == top_for(candidate, epilogue.start_line) > 0
        sym = definitions(EXPERT)["_sym_kernel"]
        assert expert.scroll_offset.y == top_for(expert, sym.start_line) and sym.start_line in expert.highlighted
        assert any("def _sym_kernel(" in line for line in visible(expert))
        assert segment.start_line in expert.highlighted  # the criterion names _segment too
        detail = str(screen.query_one("#detail", Static).content)
        assert "citation 1: solution.py" in detail and "verified" in detail and "supports L2.c.symmetric_gemm_add" in detail
        assert "◐ L2.c.symmetric_gemm_add (partial)" in detail and "✓ L2.c.parallel_sequential (realized)" in detail

        await pilot.press("up")  # L2's heading: every L2 citation highlighted, nothing on the expert side
        await settle(pilot)
        assert screen.selected == "level-L2" and expert.highlighted == set()
        assert candidate.highlighted == {n for c in verdict.levels["L2"].citations for n in range(c.start_line, c.end_line + 1)}

        # a shipped example: shown the same, but judging and reviewing it are refused (no dialog, nothing written)
        before = shipped.log_path.read_bytes()
        for key in ("o", "c", "j"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is screen
        assert shipped.log_path.read_bytes() == before
        assert "(shipped example, read-only)" in str(screen.query_one("#review-header", Static).content)


@pytest.mark.asyncio
async def test_a_changed_score_writes_a_review_event_and_the_shown_score_changes(
    make_app: Callable[[], WorkbenchApp], writable: SessionRef
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(pilot, writable)
        assert option_text(screen, "level-L3") == "L3      15  changed"
        before = len(read_log(writable.log_path).events)
        screen.query_one("#citations", OptionList).highlighted = 7  # L3's first citation
        await settle(pilot)
        assert screen.selected == "cit-L3-0"
        await pilot.press("o")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ReviewDialog) and dialog.level == "L3"
        assert dialog.query_one("#review-score", Input).value == "15"  # the effective score
        dialog.query_one("#review-score", Input).value = "12"
        dialog.query_one("#review-reason", Input).value = "one stage and masks in every K step"
        dialog.query_one("#review-author", Input).value = "tester"
        await pilot.click("#review-ok")
        await settle(pilot)
        assert app.screen is screen
        events = read_log(writable.log_path).events
        assert len(events) == before + 1
        review = events[-1]
        assert isinstance(review, Review) and review.rev == 4
        assert review.review | {"time": None} == review.review | {
            "level": "L3", "score": 12.0, "action": "change", "original_score": 20.0, "previous_score": 15.0,
            "author": "tester", "reason": "one stage and masks in every K step", "kind": "impl", "time": None,
        }  # fmt: skip
        assert option_text(screen, "level-L3") == "L3      12  changed"
        assert "changed 12 by tester on " in str(screen.query_one("#detail", Static).content)
        header = str(screen.query_one("#review-header", Static).content)
        assert f"JS_impl {(5 + 30 + 12) / 3:.1f} (effective)" in header
        assert screen.selected == "cit-L3-0"  # the selection survives the reload

        await pilot.press("up", "up", "up", "up", "c")  # L2's heading, then confirm its score
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ReviewDialog) and dialog.confirm and dialog.query_one("#review-score", Input).disabled
        dialog.query_one("#review-reason", Input).value = "fair"
        await pilot.press("enter")
        await settle(pilot)
        last = read_log(writable.log_path).events[-1]
        assert isinstance(last, Review) and last.review["action"] == "confirm" and last.review["level"] == "L2"
        assert last.review["score"] == 30.0


@pytest.mark.slow  # a real judge subprocess (about 7 s on a 2-core CPU); the judge itself: tests/judge
@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_the_judge_runs_in_a_subprocess_with_progress_and_its_verdict_is_shown(
    make_app: Callable[[], WorkbenchApp], writable: SessionRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    store = SessionStore(writable.dir.parent, examples=None)
    view = store.load(writable)
    text = store.workspace(writable).read_text(view.state.revisions[3].sha, "solution.py") or ""
    app = make_app()
    with FakeModelServer("openai-chat") as server:
        server.script(ModelTurn(text=example_replies(text)[1]))
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_review(pilot, writable, rev=3)
            assert "not judged yet" in str(screen.query_one("#review-header", Static).content)
            await pilot.press("j")
            await settle(pilot)
            dialog = app.screen
            assert isinstance(dialog, JudgeDialog)
            dialog.query_one("#judge-model", Input).value = "gpt-4.1"
            dialog.query_one("#judge-base-url", Input).value = server.base_url
            await pilot.click("#judge-ok")
            await pilot.pause()
            progress = screen.query_one("#judge-progress", Static)
            assert screen.judging and progress.display
            await wait_until(pilot, lambda: not screen.judging, 45, "the judge subprocess")
            await settle(pilot)
            header = str(screen.query_one("#review-header", Static).content)
            assert "JS_impl 18.3 (effective) · judge: openai gpt-4.1 · verified" in header
            assert not progress.display
    [request] = server.requests
    assert request.body["response_format"]["type"] == "json_schema"
    verdicts = [e for e in read_log(writable.log_path).events if isinstance(e, JudgeVerdict)]
    assert verdicts[-1].rev == 3 and verdicts[-1].verdict["complete"]


# ---- snapshots ---------------------------------------------------------------------------------------------


def reviewing(ref_of: Callable[[], SessionRef], *keys: str) -> Callable[[Any], Awaitable[None]]:
    async def ready(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.push_screen(ReviewScreen(ref_of()))
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return ready


def test_review_screen_snapshot(snap_compare, make_app, shipped) -> None:  # type: ignore[no-untyped-def]
    # the judged example's submission: its first citation (L1) and the expert's _segment highlighted
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=reviewing(lambda: shipped))


def test_review_screen_snapshot_l2_citation(snap_compare, make_app, shipped) -> None:  # type: ignore[no-untyped-def]
    # L2's fused-epilogue citation beside the expert's _sym_kernel, the level's rubric marked
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=reviewing(lambda: shipped, "down", "down"))


@pytest.mark.asyncio
async def test_the_review_queue_lists_unreviewed_levels_and_opens_their_review(
    context: WorkbenchContext, writable: SessionRef, shipped: SessionRef
) -> None:
    """Issue 30, review queue: `v` lists every verdict level no reviewer has looked at, across the sessions
    (the shipped examples left out: they cannot be reviewed); Enter opens that revision's review."""
    from textual.widgets import DataTable

    from workbench.judge.scores import review_queue
    from workbench.tui.screens.review_queue import ReviewQueueScreen

    expected = review_queue(writable.id, SessionStore(context.sessions_dir, None).load(writable))
    assert expected  # the example was judged, and none of its levels reviewed since
    app = WorkbenchApp(context)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        queue = app.screen
        assert isinstance(queue, ReviewQueueScreen)
        table = queue.query_one("#queue-table", DataTable)
        assert table.row_count == len(expected)  # the writable copy's levels; the read-only example is not listed
        assert f"{len(expected)} level(s) to review in 1 session(s)" in str(queue.query_one("#queue-caption", Static).content)
        await pilot.press("enter")
        await settle(pilot)
        review = app.screen
        assert isinstance(review, ReviewScreen) and review.ref.id == writable.id
