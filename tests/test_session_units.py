"""Session pieces without a real evaluation: config, workspace, queue rule, selection, CLI usage errors."""

from __future__ import annotations

import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench import paths
from workbench.catalog import Catalog
from workbench.cli import app
from workbench.harness.protocol.report import EvalReport, TimingStats, WorkloadResult
from workbench.session.config import (
    AgentConfig,
    ConfigError,
    SessionConfig,
    dump_config,
    load_config,
    new_session_id,
    write_config,
)
from workbench.session.create import create_session
from workbench.session.evaluation import EvaluationQueue
from workbench.session.events import EvalFinished, EvalSkipped, EvalStarted, Event, Revision
from workbench.session.state import SessionState, select_submission
from workbench.session.store import EXAMPLES_DIR, SessionStore
from workbench.session.workspace import Workspace, WorkspaceError

cli = CliRunner()
CATALOG = Catalog(paths.tasks_root(), paths.guidance_root())


def test_session_id_is_readable_and_sortable() -> None:
    first = new_session_id("muon_orthogonalize", datetime(2026, 11, 30, 5, 12, 0, tzinfo=UTC))
    later = new_session_id("muon_orthogonalize", datetime(2026, 11, 30, 5, 12, 1, tzinfo=UTC))
    assert first.startswith("20261130-051200-muon_orthogonalize-") and len(first.rsplit("-", 1)[1]) == 4
    assert first < later


def test_config_round_trips_through_toml(tmp_path: Path) -> None:
    config = SessionConfig(
        id="x-1",
        task="t",
        guidance="L1+L2",
        driver="command",
        command='echo "hi" \\ there',
        device="cuda:1",
        workloads=["a", "b"],
        created=datetime(2026, 1, 2, tzinfo=UTC),
        versions={"torch": "2.13"},
    )
    write_config(tmp_path, config)
    assert load_config(tmp_path) == config
    assert "from_session" not in dump_config(config)  # None values are left out


def test_new_session_workspace_has_template_and_public_files_only(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, examples=None)
    ref = create_session(store, CATALOG, "muon_orthogonalize", guidance="L1+L2", device="cpu")
    files = {p.relative_to(ref.workspace).as_posix() for p in ref.workspace.rglob("*") if ".git" not in p.parts and p.is_file()}
    assert files == {
        ".gitignore",
        "BRIEF.md",
        "solution.py",
        "task/description.md",
        "task/reference.py",
        "task/inputs.py",
        "task/template.py",
        "task/task.toml",
        "task/guidance.md",
    }
    guidance = (ref.workspace / "task" / "guidance.md").read_text()
    assert "## L1" in guidance and "## L2" in guidance and "## L3" not in guidance
    template = (paths.tasks_root() / "muon_orthogonalize" / "template.py").read_text()
    history = Workspace(ref.workspace).history()
    assert len(history) == 1 and history[0].author == "template"
    assert Workspace(ref.workspace).read_text(history[0].sha, "solution.py") == template
    assert load_config(ref.dir).guidance == "L1+L2"
    unguided = create_session(store, CATALOG, "muon_orthogonalize", device="cpu", repetition=2)
    assert load_config(unguided.dir).repetition == 2 and load_config(ref.dir).repetition is None  # reports average them
    assert not (unguided.workspace / "task" / "guidance.md").exists()
    assert "guidance" not in (unguided.workspace / "BRIEF.md").read_text().lower().split("## description")[0]


def test_workspace_commit_history_and_bundle(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path / "ws", {"solution.py": "v1\n"}, "template", "first")
    assert ws.commit_all("human", "nothing") is None
    (ws.path / "solution.py").write_text("v2\n")
    (ws.path / "helper.py").write_text("h\n")
    (ws.path / "__pycache__").mkdir()
    (ws.path / "__pycache__" / "x.pyc").write_bytes(b"\0")
    info = ws.commit_all("human", "second")
    assert info is not None and info.author == "human" and sorted(info.files) == ["helper.py", "solution.py"]
    history = ws.history()
    assert [c.message for c in history] == ["first", "second"]
    assert history[1].files == ["helper.py", "solution.py"]
    clone = Workspace.from_bundle(ws.export_bundle(tmp_path / "out" / "workspace.bundle"), tmp_path / "cache")
    assert [c.sha for c in clone.history()] == [c.sha for c in history]
    assert clone.read_text(history[1].sha, "solution.py") == "v2\n"


def test_a_deleted_workspace_never_commits_to_the_repository_around_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session folder deleted under its running runner: git must not fall back to the runner's working
    directory, where it would stage and commit whatever repository holds it (a user's project)."""
    project = Workspace.create(tmp_path / "project", {"notes.txt": "mine\n"}, "someone", "project's first")
    (project.path / "notes.txt").write_text("uncommitted work\n")
    (project.path / "new.txt").write_text("untracked\n")
    ws = Workspace.create(tmp_path / "sessions" / "s1" / "workspace", {"solution.py": "v1\n"}, "template", "first")
    monkeypatch.chdir(project.path)  # the runner's working directory
    shutil.rmtree(ws.path.parent)
    with pytest.raises(WorkspaceError, match="gone"):
        ws.commit_all("human", "revision 2")
    assert ws.problem() is not None  # the runner sees a broken repository and ends the run
    try:
        seen = [c.message for c in ws.history()]
    except Exception:  # any failure is right; reading the project's history is not
        seen = []
    assert "project's first" not in seen
    assert [c.message for c in project.history()] == ["project's first"]
    assert project.repo.git.status("--porcelain") == " M notes.txt\n?? new.txt"  # nothing staged there


def test_newer_revisions_replace_queued_ones_unless_kept() -> None:
    release = threading.Event()
    events: list[Event] = []
    lock = threading.Lock()

    def emit(event: Event) -> Event:
        with lock:
            events.append(event)
        return event

    def evaluator(path: Path) -> EvalReport:
        release.wait(10)
        return EvalReport(task="t", solution=str(path), device="cpu", status="passed")

    queue = EvaluationQueue(evaluator, lambda sha: b"x = 1\n", emit, "cpu", "t")
    queue.submit(1, "a")
    assert _wait(lambda: any(isinstance(e, EvalStarted) for e in events))
    queue.submit(2, "b", keep=True)
    queue.submit(3, "c")
    queue.submit(4, "d")  # supersedes 3, not the kept 2
    release.set()
    assert queue.drain(20)
    queue.close()
    skipped = [(e.rev, e.superseded_by) for e in events if isinstance(e, EvalSkipped)]
    finished = [e.rev for e in events if isinstance(e, EvalFinished)]
    assert skipped == [(3, 4)] and finished == [1, 2, 4]


def _wait(condition, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def _finished(rev: int, status: str, speedup_ms: tuple[float, float] | None = None) -> list[Event]:
    timing = None
    if speedup_ms:
        timing = [
            TimingStats(mean_ms=m, median_ms=m, min_ms=m, max_ms=m, std_ms=0, reps=1, rel_sem=0, method="events")
            for m in speedup_ms
        ]
    workload = WorkloadResult(
        name="w",
        status=status,
        latency=timing[0] if timing else None,  # type: ignore[arg-type]
        reference=timing[1] if timing else None,
    )
    report = EvalReport(
        task="t",
        solution="s",
        device="cuda" if timing else "cpu",
        status=status,  # type: ignore[arg-type]
        workloads=[workload],
    )
    return [
        Revision(rev=rev, sha=str(rev) * 40, files=["solution.py"], author="x"),
        EvalStarted(rev=rev, sha=str(rev) * 40, device="cpu"),
        EvalFinished(rev=rev, sha=str(rev) * 40, report=report),
    ]


def _state(*groups: list[Event]) -> SessionState:
    events = [e for group in groups for e in group]
    for seq, event in enumerate(events, start=1):
        event.seq = seq
    return SessionState.from_events(events)


def test_selection_highest_speedup_else_last_passing_else_none() -> None:
    timed = _state(_finished(1, "passed", (2.0, 4.0)), _finished(2, "passed", (1.0, 4.0)), _finished(3, "passed", (4.0, 4.0)))
    chosen, reason = select_submission(timed.ordered())
    assert chosen is not None and chosen.rev == 2 and "speedup" in reason
    cpu = _state(_finished(1, "passed"), _finished(2, "passed"), _finished(3, "runtime_error"))
    chosen, reason = select_submission(cpu.ordered())
    assert chosen is not None and chosen.rev == 2 and "last passing" in reason
    assert select_submission(_state(_finished(1, "crashed")).ordered())[0] is None


def test_state_marks_an_evaluation_cut_off_by_a_restart_as_pending() -> None:
    from workbench.session.events import SessionStarted

    events: list[Event] = [
        SessionStarted(task="t", guidance="none", driver="human", device="cpu"),
        *_finished(1, "passed")[:2],
        SessionStarted(task="t", guidance="none", driver="human", device="cpu", resumed=True),
    ]
    state = _state(events)
    assert state.revisions[1].eval_state == "pending" and state.revisions[1].interrupted == 1
    assert [r.rev for r in state.unevaluated()] == [1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["session", "new", "nope"], "no task 'nope'"),
        (["session", "new", "muon_orthogonalize", "--guidance", "L3"], "unknown guidance configuration"),
        (["session", "new", "muon_orthogonalize", "--driver", "command"], "needs --command"),
        (["session", "new", "muon_orthogonalize", "--driver", "replay"], "needs --from"),
        (["session", "new", "muon_orthogonalize", "--driver", "replay", "--from", "nope"], "no session 'nope'"),
        (["session", "new", "muon_orthogonalize", "--driver", "robot"], "unknown driver"),
        (["session", "new", "muon_orthogonalize", "--device", "tpu"], "unknown device"),
        (["session", "new", "muon_orthogonalize", "--device", "cpu", "--workload", "huge"], "no workload 'huge'"),
        (["session", "run", "nope"], "no session 'nope'"),
        (["session", "show", "nope"], "no session 'nope'"),
        (["replay", "nope"], "no session 'nope'"),
    ],
)
def test_bad_usage_exits_2_with_a_message(tmp_path: Path, args: list[str], message: str) -> None:
    result = cli.invoke(app, [*args, "--sessions-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert not any(tmp_path.iterdir())  # nothing half-created


def test_shipped_example_can_be_listed_and_shown_but_not_run(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, EXAMPLES_DIR)
    examples = [ref for ref in store.list() if ref.read_only]
    assert examples, "sessions/examples/ ships at least one recorded session"
    ref = examples[0]
    view = store.load(ref)
    assert not view.bad_lines and not view.state.seq_problems
    assert len(view.state.revisions) >= 3 and all(r.eval_state == "finished" for r in view.state.ordered())
    assert view.state.submission is not None and view.state.finished is not None
    history = store.workspace(ref).history()
    assert [c.sha for c in history] == [r.sha for r in view.state.ordered()]
    listed = cli.invoke(app, ["session", "list", "--sessions-dir", str(tmp_path)])
    assert listed.exit_code == 0 and ref.id in listed.stdout
    shown = cli.invoke(app, ["session", "show", ref.id, "--json", "--sessions-dir", str(tmp_path)])
    assert shown.exit_code == 0
    run = cli.invoke(app, ["session", "run", ref.id, "--sessions-dir", str(tmp_path)])
    assert run.exit_code == 2 and "read-only" in run.stderr


def test_a_burst_of_writes_to_one_file_ends_only_after_the_quiet_time(tmp_path: Path) -> None:
    from workbench.session.watcher import Watcher

    bursts: list[set[str]] = []
    watcher = Watcher(
        tmp_path, lambda paths: bursts.append(paths) if paths else None, quiet_ms=500, max_wait_ms=10_000, poll_s=0.5
    )
    watcher.start()
    try:
        time.sleep(0.5)
        target = tmp_path / "solution.py"
        for n in range(15):  # a save every 0.1 s for 1.5 s: one burst
            target.write_text(f"x = {n}\n")
            time.sleep(0.1)
        time.sleep(1.5)
    finally:
        watcher.stop()
    assert len(bursts) == 1, bursts
    assert bursts[0] == {str(target)}


@pytest.mark.parametrize("when", ["before the start", "while watching"])
def test_a_watched_folder_that_vanishes_ends_the_reading_quietly_and_the_polls_go_on(
    tmp_path: Path, when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.session.watcher import Watcher

    crashed: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args.exc_value))
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "solution.py").write_text("x = 1\n")
    polls = threading.Semaphore(0)
    watcher = Watcher(root, lambda paths: polls.release(), quiet_ms=100, poll_s=0.2)
    if when == "before the start":
        shutil.rmtree(root)
    watcher.start()
    try:
        if when == "while watching":
            time.sleep(0.3)
            shutil.rmtree(root)
        for _ in range(3):  # the caller keeps being called, so its own check can find the workspace gone
            assert polls.acquire(timeout=10), "the watcher stopped calling back"
    finally:
        watcher.stop()
    assert crashed == [], crashed


FORMAT_1_AGENT = """format = 1
id = "20261201-034424-muon_orthogonalize-9866"
task = "muon_orthogonalize"
guidance = "none"
driver = "agent"
unsandboxed = false
device = "cpu"
provider = "openai"
model = "scripted-muon"
max_turns = 40
max_usd = 2.5
allow_unpriced = true
agent_mode = "design"
created = 2026-12-01T03:44:24+00:00
"""


def test_a_format_1_session_toml_reads_as_the_same_settings_and_writes_back_as_format_2(tmp_path: Path) -> None:
    (tmp_path / "session.toml").write_text(FORMAT_1_AGENT)
    config = load_config(tmp_path)
    assert config.agent == AgentConfig(
        provider="openai", model="scripted-muon", max_turns=40, max_usd=2.5, allow_unpriced=True, mode="design"
    )
    assert config.design_mode and config.command is None and config.from_session is None
    write_config(tmp_path, config)
    assert load_config(tmp_path) == config and "[driver]" in (tmp_path / "session.toml").read_text()
    # a format-1 file whose non-agent session carries an agent setting someone set is refused, not dropped
    (tmp_path / "session.toml").write_text(FORMAT_1_AGENT.replace('driver = "agent"', 'driver = "human"'))
    with pytest.raises(ConfigError, match="not a setting of the human driver"):
        load_config(tmp_path)


def test_a_workspace_is_safe_to_read_from_one_thread_while_another_commits(tmp_path: Path) -> None:
    """The runner commits while its evaluation thread reads a revision's file: no interleaved object reads.
    Twelve commits, each raced by two readers that read between every pair of them (each read is a git process:
    thirty commits took 15-17 s of the loaded fast subset and raced nothing the twelve do not)."""
    import threading

    commits = 12
    workspace = Workspace.create(tmp_path / "ws", {"solution.py": "v = 0\n"}, "template", "template")
    first = workspace.head()
    assert first is not None
    failures: list[BaseException] = []
    reads_seen_by_commit: list[int] = []  # how many reads had been made when each commit started
    reads = [0]
    done = threading.Event()

    def read_forever() -> None:
        while not done.is_set():
            try:
                assert workspace.read_text(first, "solution.py") == "v = 0\n"
                workspace.history()
                reads[0] += 1
            except BaseException as exc:  # any corrupt read fails the test
                failures.append(exc)
                return

    readers = [threading.Thread(target=read_forever) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for n in range(1, commits + 1):
            while reads_seen_by_commit and reads[0] <= reads_seen_by_commit[-1] and not failures:
                done.wait(0.005)  # a read between this commit and the last one, so that every commit is raced
            reads_seen_by_commit.append(reads[0])
            (tmp_path / "ws" / "solution.py").write_text(f"v = {n}\n")
            info = workspace.commit_all("human", f"revision {n + 1}")
            assert info is not None and info.author == "human"
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert failures == []
    assert len(workspace.history()) == commits + 1
    assert len(set(reads_seen_by_commit)) == commits  # the readers read between every two commits


def test_a_commit_the_workspace_lacks_is_a_workspace_error_naming_it(tmp_path: Path) -> None:
    workspace = Workspace.create(tmp_path / "ws", {"solution.py": "v = 0\n"}, "template", "template")
    for missing in ("0" * 40, "f" * 40, "not-a-sha"):
        with pytest.raises(WorkspaceError, match="is not in the workspace"):
            workspace.read_bytes(missing, "solution.py")
        with pytest.raises(WorkspaceError, match="is not in the workspace"):
            workspace.commit_info(missing)


def test_a_deleted_workspace_reports_its_problem_instead_of_raising(tmp_path: Path) -> None:
    """The runner asks `problem()` after a failed commit; with the folder gone, git cannot even start there
    (GitCommandNotFound, not GitCommandError): the answer must be a reason, so the run ends cleanly."""
    workspace = Workspace.create(tmp_path / "ws", {"a.txt": "x\n"}, "someone", "first")
    assert workspace.problem() is None
    shutil.rmtree(workspace.path)
    problem = workspace.problem()
    assert problem is not None and "gone" in problem
