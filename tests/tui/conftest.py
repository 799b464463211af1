"""Fixtures for the workbench's Pilot and snapshot tests: isolated roots with the shipped example only."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import textual.app
import textual.pilot
from textual.css.stylesheet import Stylesheet
from textual.pilot import Pilot

from workbench import paths
from workbench.session.store import SessionStore, SessionView
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext
from workbench.tui.widgets.footer import WorkbenchFooter

from .helpers_css import ParsedRules, shared_parse_rules
from .helpers_wait import quiet_wait_for_idle

EXAMPLE_ID = "20261130-053407-muon_orthogonalize-eab7"
EXAMPLE = paths.REPO_ROOT / "sessions" / "examples" / EXAMPLE_ID
SIZE = (120, 40)
TASKS = ("muon_orthogonalize", "rmsnorm_bwd")  # the tasks these tests see, whatever else tasks/ holds


def copy_tasks(dest: Path) -> tuple[Path, Path]:
    """Copies of TASKS' task and guidance folders under dest (tasks added to the catalogue later do not
    change these tests' tables, snapshots and default selections)."""
    for task_id in TASKS:
        for kind in ("tasks", "guidance"):
            shutil.copytree(paths.REPO_ROOT / kind / task_id, dest / kind / task_id, ignore=shutil.ignore_patterns("__pycache__"))
    return dest / "tasks", dest / "guidance"


def forget_drawn_styles() -> None:
    """Let go of the widgets' style caches that Textual 8.2 keeps after their app is gone: its
    `StylesCache.get_inner_outer` is an `lru_cache` on a method, which holds up to 1,024 of them, each with its
    rendered lines (Textualize/textual#6665): some 20,000 objects a test, which every full collection of the
    later tests in the process walked again (0.3-0.4 s each, a quarter of the TUI tests' CPU)."""
    try:  # a private module: a Textual that fixed the leak (or moved the cache) needs nothing here
        from textual._styles_cache import StylesCache
    except ImportError:
        return
    clear = getattr(getattr(StylesCache, "get_inner_outer", None), "cache_clear", None)
    if callable(clear):
        clear()


@pytest.fixture(autouse=True)
def drawn_styles_forgotten() -> Iterator[None]:
    """Each test's widgets go when it ends (`forget_drawn_styles`)."""
    yield
    forget_drawn_styles()


@pytest.fixture(autouse=True)
def pilot_waits_only_while_work_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Pilot's keys and pauses wait for the app to be idle by looking at what is due, not by watching 20 ms
    windows pass (`helpers_wait`): the same end state, some 60 ms a key sooner."""
    try:  # a private module: a Textual that moved it keeps its own waits
        from textual._context import active_app
    except ImportError:
        return
    for module in (textual.pilot, textual.app):  # where Textual's Pilot and App wait (left alone if moved)
        textuals = getattr(module, "wait_for_idle", None)
        if callable(textuals):
            monkeypatch.setattr(module, "wait_for_idle", quiet_wait_for_idle(textuals, active_app))


@pytest.fixture(scope="session")
def parsed_css() -> ParsedRules:
    """The Textual CSS parsed so far in this test process (`helpers_css`)."""
    return {}


@pytest.fixture(autouse=True)
def css_parsed_once(monkeypatch: pytest.MonkeyPatch, parsed_css: ParsedRules) -> None:
    """Each app's stylesheets reuse the rule sets parsed for the earlier tests' apps (`helpers_css`)."""
    monkeypatch.setattr(Stylesheet, "_parse_rules", shared_parse_rules(Stylesheet._parse_rules, parsed_css))


@pytest.fixture
def examples_dir(tmp_path: Path) -> Path:
    """Only the bundled example (others may be added to sessions/examples without changing these tests)."""
    dest = tmp_path / "examples"
    shutil.copytree(EXAMPLE, dest / EXAMPLE_ID)
    return dest


@pytest.fixture
def context(tmp_path: Path, examples_dir: Path) -> WorkbenchContext:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    tasks, guidance = copy_tasks(tmp_path / "catalogue")
    context = WorkbenchContext.from_roots(tasks, guidance, sessions, examples_dir, tmp_path / "campaigns")
    return dataclasses.replace(context, check_providers=False)  # no model API is reachable here


@pytest.fixture
def example(context: WorkbenchContext) -> SessionView:
    """The shipped example as the store reads it: tests derive what they expect (revisions, statuses,
    events, submission) from it, so that re-recording the example does not break them."""
    return SessionStore(context.sessions_dir, context.examples_dir).load(EXAMPLE_ID)


@pytest.fixture
def make_app(context: WorkbenchContext) -> Callable[[], WorkbenchApp]:
    return lambda: WorkbenchApp(context)


async def settle(pilot: Pilot[None]) -> None:
    """Wait for every worker to finish, the messages they posted to be handled and the footer to show the keys
    the focused widget gives (its rebuild runs after a refresh, so a snapshot could catch the keys before)."""
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    for _ in range(250):  # 5 s: a loaded CI machine
        if all(footer.settled for footer in pilot.app.screen.query(WorkbenchFooter)):
            break
        await pilot.pause(0.02)
    else:
        footer = pilot.app.screen.query_one(WorkbenchFooter)
        raise AssertionError(f"the footer never showed the keys of the screen's bindings: {footer.describe()}")
    for _ in range(2):  # a tab bar moves its underline after a refresh, sliding: a snapshot must not catch it mid-way
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.wait_for_animation()
