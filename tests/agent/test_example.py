"""The shipped agent session: readable like any example, its conversation rebuildable from the log, and
replayable (here with a fake evaluator; `d2k-workbench replay 9866` re-evaluates it for real)."""

from __future__ import annotations

from pathlib import Path

from workbench import paths
from workbench.agent import agent_outcome
from workbench.agent.loop import History
from workbench.agent.testing import MUON_NAIVE
from workbench.llm import AssistantTurn, ToolResultsTurn
from workbench.session.config import ReplayConfig
from workbench.session.create import create_session
from workbench.session.drivers import ReplayDriver
from workbench.session.events import ModelCall, Revision, ToolCall, ToolResult
from workbench.session.runner import Runner
from workbench.session.store import SessionStore

from .helpers import CATALOG, FakeEvaluator, of

EXAMPLE = "20261201-034424-muon_orthogonalize-9866"


def shipped() -> SessionStore:
    return SessionStore(Path("/nonexistent-sessions-root"), examples=paths.REPO_ROOT / "sessions" / "examples")


def test_the_shipped_agent_session_reads_and_rebuilds_its_conversation() -> None:
    store = shipped()
    view = store.load(store.resolve(EXAMPLE))
    assert view.ref.read_only and not view.bad_lines and not view.state.seq_problems
    assert view.config.agent is not None and view.config.agent.model == "scripted-muon"
    events = view.events
    assert [c.turn for c in of(events, ModelCall)] == [1, 2, 3, 4, 5, 6, 7]
    calls, results = of(events, ToolCall), of(events, ToolResult)
    assert [(c.turn, c.call_id) for c in calls] == [(r.turn, r.call_id) for r in results]
    assert [c.name for c in calls] == [
        "list_files",
        "read_file",
        "read_file",
        "write_file",
        "run_tests",
        "write_file",
        "run_tests",
        "submit",
    ]
    assert "incorrect_numerical" in results[4].content and "every workload is within the tolerance" in results[6].content
    statuses = {r.rev: r.status for r in view.state.ordered()}
    assert statuses == {1: "runtime_error", 2: "incorrect_numerical", 3: "passed"}
    assert view.state.submission is not None and view.state.submission.rev == 3
    assert store.workspace(view.ref).read_text(view.state.revisions[3].sha, "solution.py") == MUON_NAIVE.read_text()
    history = History.from_state(view.state, view.config)
    assert history.ended is not None and not history.calls
    assert sum(isinstance(m, AssistantTurn) for m in history.messages) == 7
    assert sum(isinstance(m, ToolResultsTurn) for m in history.messages) == 7
    outcome = agent_outcome(view.state)
    assert outcome.submitted and outcome.turns == 7 and outcome.cost_usd is None and outcome.failure is None


def test_the_shipped_agent_session_replays(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions", examples=paths.REPO_ROOT / "sessions" / "examples")
    ref = create_session(store, CATALOG, "muon_orthogonalize", driver=ReplayConfig(from_session=EXAMPLE), device="cpu")
    evaluator = FakeEvaluator()
    result = Runner(store, ref, CATALOG, driver=ReplayDriver(store, EXAMPLE), evaluator=evaluator, poll_s=0.2).run()
    revisions = of(store.load(ref).events, Revision)
    assert [(r.rev, r.replay_of) for r in revisions] == [(1, None), (2, 2), (3, 3)]
    assert evaluator.seen[-1] == MUON_NAIVE.read_text()
    assert result.reason.startswith(f"replayed {EXAMPLE}: 2 revision(s)")
