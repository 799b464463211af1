"""The read API (SessionStore): one summary type, its cache, tail(), the runner's pid; export; formatting.

Sessions here are synthetic (workbench.session.testing): real folders, git workspaces and sealed logs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from workbench.errors import SessionError, UsageError
from workbench.harness.protocol.report import EvalReport, Status
from workbench.session.eventlog import LOCK_NAME, EventWriter
from workbench.session.events import DriverOutput
from workbench.session.export import export_session
from workbench.session.format import format_speedup, session_show, sessions_table, status_style, summaries_json
from workbench.session.layout import BUNDLE_NAME, SessionRef
from workbench.session.store import SessionStore, SessionSummary, SessionView
from workbench.session.testing import finished_session, timed_report
from workbench.session.workspace import Workspace

TASK = "muon_orthogonalize"


def solutions(n: int) -> list[str]:
    return [f"def run(G, steps):\n    return G  # revision {rev}\n" for rev in range(1, n + 1)]


def report(rev: int) -> EvalReport:
    """Revision 1 fails; later ones pass, each faster than the one before."""
    status: Status = "runtime_error" if rev == 1 else "passed"
    return timed_report(TASK, {"w1": (4.0 / rev, 4.0)}, status=status, device="cpu")


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions", examples=None)


def text_of(renderable: object) -> str:
    console = Console(width=300, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_a_synthetic_session_reads_like_a_recorded_one(store: SessionStore) -> None:
    ref = finished_session(store.root, TASK, solutions(3), report)
    view = store.load(ref)
    assert not view.bad_lines and not view.state.seq_problems  # sealed by the real writer
    assert [r.status for r in view.state.ordered()] == ["runtime_error", "passed", "passed"]
    assert [r.sha for r in view.state.ordered()] == [c.sha for c in Workspace(ref.workspace).history()]
    assert Workspace(ref.workspace).read_text(view.state.revisions[3].sha, "solution.py") == solutions(3)[2]
    assert view.state.submission is not None and view.state.submission.rev == 3
    assert view.state.finished is not None and len(view.events) == view.state.last_seq


def test_summaries_are_one_type_with_a_problem_for_an_unreadable_session(store: SessionStore) -> None:
    good = finished_session(store.root, TASK, solutions(2), report)
    broken = finished_session(store.root, TASK, solutions(1), report, session_id="zz-broken")
    broken.config_path.write_text("not = [valid\n")
    rows = store.summaries()
    assert all(isinstance(r, SessionSummary) for r in rows)
    by_id = {r.id: r for r in rows}
    ok, bad = by_id[good.id], by_id[broken.id]
    assert ok.problem is None and ok.ref == good and ok.revisions == 2 and ok.best_rev == 2
    assert ok.best_status == "passed" and ok.best_speedup == pytest.approx(2.0) and ok.finished
    assert bad.problem is not None and "not valid TOML" in bad.problem
    assert bad.ref == broken and bad.created is None and bad.revisions == 0 and bad.best_status is None
    assert summaries_json(rows)[1] == {"id": broken.id, "error": bad.problem}
    table = text_of(sessions_table(rows, store.root))
    assert "not valid TOML" in table and "2.00x" in table


def test_summaries_are_cached_until_the_log_or_config_changes(store: SessionStore, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ref = finished_session(store.root, TASK, solutions(2), report)
    first = store.summaries()[0]
    loads: list[str] = []
    real_load = store.load

    def counted_load(ref: SessionRef | str) -> SessionView:
        loads.append(ref.id if isinstance(ref, SessionRef) else ref)
        return real_load(ref)

    monkeypatch.setattr(store, "load", counted_load)
    assert store.summaries()[0] is first and loads == []  # unchanged: not read again
    with EventWriter(ref.dir, secrets={}) as writer:  # the log grows
        writer.append(DriverOutput(stream="stdout", text="more"))
    assert store.summaries()[0] is not first and loads == [ref.id]
    stat = ref.config_path.stat()  # session.toml rewritten (same size, newer mtime)
    os.utime(ref.config_path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    store.summaries()
    assert loads == [ref.id, ref.id]
    (ref.dir / "session.toml").unlink()
    assert store.summaries() == []  # no session.toml: not a session any more, and forgotten


def test_tail_continues_where_the_view_stopped(store: SessionStore) -> None:
    ref = finished_session(store.root, TASK, solutions(2), report)
    view, tail = store.tail(ref)
    assert [e.seq for e in view.events] == [e.seq for e in store.load(ref).events]
    assert view.state.submission is not None and tail.poll() == []
    with EventWriter(ref.dir, secrets={}) as writer:
        writer.append(DriverOutput(stream="stdout", text="later"))
    new = tail.poll()
    assert [e.seq for e in new] == [len(view.events) + 1]


def test_runner_pid_names_the_process_holding_the_lock(store: SessionStore) -> None:
    ref = finished_session(store.root, TASK, solutions(1), report)
    assert store.runner_pid(ref) is None and not store.is_running(ref)  # a lock file left behind is not a runner
    with EventWriter(ref.dir, secrets={}):
        assert store.is_running(ref) and store.runner_pid(ref) == os.getpid()
        (ref.dir / LOCK_NAME).write_text("garbage\n")
        with pytest.raises(SessionError, match="cannot tell the runner's pid"):
            store.runner_pid(ref)
    assert store.runner_pid(ref) is None


def test_export_writes_the_example_form_and_refuses_what_it_must(store: SessionStore, tmp_path: Path) -> None:
    ref = finished_session(store.root, TASK, solutions(2), report)
    dest = tmp_path / "out" / ref.id  # the folder to create: exactly this one, whether or not it exists
    target = export_session(store, ref, dest)
    assert target == dest
    assert sorted(p.name for p in target.iterdir()) == sorted(["session.toml", "events.jsonl", BUNDLE_NAME])
    shipped = SessionStore(tmp_path / "none", examples=dest.parent)
    example = shipped.list()[0]
    assert example.read_only and example.id == ref.id
    assert [r.sha for r in shipped.load(example).state.ordered()] == [c.sha for c in shipped.workspace(example).history()]
    with pytest.raises(UsageError, match="not empty"):
        export_session(store, ref, target)
    with EventWriter(ref.dir, secrets={}), pytest.raises(SessionError, match="being run"):
        export_session(store, ref, tmp_path / "elsewhere")


def test_one_speedup_format_and_status_colour() -> None:
    assert format_speedup(None) == "-" and format_speedup(1.234) == "1.23x"
    assert [status_style(s) for s in (None, "passed", "timeout")] == ["dim", "green", "red"]


def test_session_show_prints_header_revisions_and_submission(store: SessionStore) -> None:
    ref = finished_session(store.root, TASK, solutions(3), report)
    text = "".join(text_of(part) for part in session_show(store.load(ref), running=False))
    assert ref.id in text and f"task {TASK}" in text and "finished:" in text
    assert "runtime_error" in text and "2.00x" in text and "3.00x" in text
    assert "submission: rev 3" in text


def test_the_cli_store_follows_d2k_sessions_dir_and_d2k_examples_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The roots are resolved by the CLI (flag, else variable, else the checkout); the store reads none."""
    from workbench.cli.common import session_store

    examples = tmp_path / "my-examples"
    monkeypatch.setenv("D2K_EXAMPLES_DIR", str(examples))
    monkeypatch.setenv("D2K_SESSIONS_DIR", str(tmp_path / "from-env"))
    assert session_store(None).examples == examples and session_store(None).root == tmp_path / "from-env"
    assert session_store(tmp_path / "flag").root == tmp_path / "flag"  # the flag wins
    monkeypatch.delenv("D2K_EXAMPLES_DIR")
    assert session_store(None).examples == Path(__file__).resolve().parent.parent / "sessions" / "examples"
    assert SessionStore(tmp_path / "sessions").examples is None  # the store itself: only what it is given
