"""Sessions end to end on the CPU, through the real CLI in subprocesses and the real harness.

To stay fast, the sessions use a scratch copy of the Muon task whose only smoke workload is small
(B=2, 64x192); everything else (template, reference, tolerance, harness) is the real task's.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench import paths
from workbench.session.eventlog import read_log
from workbench.session.events import Event
from workbench.session.state import SessionState
from workbench.session.store import EXAMPLES_DIR, SessionStore
from workbench.session.workspace import Workspace

pytestmark = pytest.mark.slow  # whole sessions in runner processes, with evaluations

REPO = paths.REPO_ROOT
HONEST = REPO / "tests" / "solutions" / "muon_naive.py"
BROKEN = "def run(G, steps):\n    return G  # not even float16\n"
SYNTAX_ERROR = "def run(G, steps:\n"
TINY = "smoke_tiny"


@pytest.fixture
def env(tmp_path: Path, tiny_tasks: Path) -> dict[str, str]:
    """Environment for CLI subprocesses: scratch sessions root and a task copy with one small smoke workload."""
    return {
        **os.environ,
        "D2K_SESSIONS_DIR": str(tmp_path / "sessions"),
        "D2K_TASKS_DIR": str(tiny_tasks),
        "PYTHONPATH": str(REPO),
    }


def cli(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


def start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "workbench", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
    )


def new_session(env: dict[str, str], *args: str) -> dict[str, str]:
    result = cli(env, "session", "new", "muon_orthogonalize", "--device", "cpu", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def unsandboxed_if_needed() -> tuple[str, ...]:
    """Command sessions run sandboxed; where bubblewrap cannot start here they must say --unsandboxed."""
    from workbench.harness.host import sandbox

    return () if sandbox.status("cpu").kind == "bubblewrap" else ("--unsandboxed",)


def events(session: dict[str, str]) -> list[Event]:
    return read_log(Path(session["dir"]) / "events.jsonl").events


def wait_for(
    session: dict[str, str],
    condition: Callable[[list[Event]], bool],
    timeout: float = 60,
    process: subprocess.Popen[str] | None = None,
) -> list[Event]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = events(session)
        if condition(found):
            return found
        if process is not None and process.poll() is not None:
            raise AssertionError(f"runner exited with {process.returncode}: {process.stderr.read() if process.stderr else ''}")
        time.sleep(0.2)
    raise AssertionError(f"timed out; log has {[(e.seq, e.type, getattr(e, 'rev', None)) for e in events(session)]}")


def finished(rev: int) -> Callable[[list[Event]], bool]:
    return lambda found: any(e.type == "eval_finished" and e.rev == rev for e in found)  # type: ignore[union-attr]


def template_skipped(found: list[Event]) -> bool:
    """Revision 1, the untouched template, is logged as not evaluated (the runner is up and reconciled)."""
    return any(e.type == "eval_skipped" and e.rev == 1 and e.reason == "template" for e in found)  # type: ignore[union-attr]


def started(rev: int) -> Callable[[list[Event]], bool]:
    return lambda found: any(e.type == "eval_started" and e.rev == rev for e in found)  # type: ignore[union-attr]


def assert_consistent(found: list[Event]) -> SessionState:
    """seq 1..N without gaps; one revision event per rev; each revision evaluated once or skipped."""
    assert [e.seq for e in found] == list(range(1, len(found) + 1))
    revs = [e.rev for e in found if e.type == "revision"]  # type: ignore[union-attr]
    assert revs == list(range(1, len(revs) + 1)), revs
    for rev in revs:
        outcomes = [e for e in found if e.type in ("eval_finished", "eval_skipped") and e.rev == rev]  # type: ignore[union-attr]
        assert len(outcomes) == 1, (rev, [o.type for o in outcomes])
    state = SessionState.from_events(found)
    assert not state.seq_problems and not state.unevaluated()
    return state


def test_human_session_end_to_end(env: dict[str, str]) -> None:
    session = new_session(env, "--driver", "human")
    workspace = Path(session["workspace"])
    runner = start(env, "session", "run", session["id"])
    try:
        wait_for(session, lambda found: any(e.type == "revision" for e in found), 30, runner)
        began = time.time()
        shutil.copy(HONEST, workspace / "solution.py")
        wait_for(session, finished(2), 60, runner)
        assert time.time() - began < 60
        second = cli(env, "session", "run", session["id"])  # a second runner is refused
        assert second.returncode == 2 and "already being run" in second.stderr
        (workspace / "solution.py").write_text(BROKEN)
        wait_for(session, finished(3), 60, runner)
    finally:
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=60)
    assert runner.returncode == 0, err
    assert "rev 2 passed" in out and "submission: rev 2" in out
    state = assert_consistent(events(session))
    assert state.revisions[1].status is None and state.revisions[1].skip_reason == "template"  # never evaluated
    assert state.revisions[2].status == "passed" and state.revisions[2].author == "human"
    assert state.revisions[3].status not in (None, "passed")
    assert state.submission is not None and state.submission.rev == 2 and state.finished is not None
    assert [c.author for c in Workspace(workspace).history()] == ["template", "human", "human"]
    shown = cli(env, "session", "show", session["id"], "--json")
    assert shown.returncode == 0
    revisions = json.loads(shown.stdout)["revisions"]
    assert [(r["rev"], r["status"]) for r in revisions][1:] == [(2, "passed"), (3, state.revisions[3].status)]
    assert revisions[1]["workloads"][0]["name"] == TINY and revisions[1]["workloads"][0]["status"] == "passed"
    table = cli(env, "session", "show", session["id"])
    assert table.returncode == 0 and TINY in table.stdout


SCRIPT = textwrap.dedent("""
    import json, os, pathlib, sys, time
    assert os.environ["D2K_BRIEF"].startswith("# Task muon_orthogonalize")
    assert pathlib.Path(os.environ["D2K_BRIEF_FILE"]).read_text() == os.environ["D2K_BRIEF"]
    assert pathlib.Path(os.environ["D2K_TASK"], "reference.py").is_file()
    solution, log = pathlib.Path(os.environ["D2K_SOLUTION"]), pathlib.Path(os.environ["D2K_RESULTS"])
    variants = ["def run(G, steps):\\n    raise ValueError('first')\\n",
                "def run(G, steps:\\n",
                "import torch\\ndef run(G, steps):\\n    return torch.zeros_like(G)\\n"]
    for rev, text in enumerate(variants, start=2):
        solution.write_text(text)
        print(f"wrote revision {rev}", flush=True)
        while not any(json.loads(l)["type"] in ("eval_finished", "eval_skipped") and json.loads(l).get("rev") == rev
                      for l in log.read_text().splitlines()):
            time.sleep(0.2)
    print("bye", file=sys.stderr)
""")


def inline(script: str) -> str:
    """A shell command running a Python script given inline (the sandbox hides the test's files)."""
    encoded = base64.b64encode(script.encode()).decode()
    return f"{sys.executable} -c \"import base64; exec(base64.b64decode('{encoded}'))\""


def test_command_driver_commits_and_evaluates_three_revisions(env: dict[str, str], tmp_path: Path) -> None:
    session = new_session(env, "--driver", "command", "--command", inline(SCRIPT), *unsandboxed_if_needed())
    result = cli(env, "session", "run", session["id"])
    assert result.returncode == 1, result.stderr  # nothing passed
    state = assert_consistent(events(session))
    assert [r.author for r in state.ordered()] == ["template", "command", "command", "command"]
    assert state.revisions[1].skip_reason == "template"  # the untouched template is not evaluated
    assert all(r.eval_state == "finished" for r in state.ordered()[1:])
    assert state.revisions[3].status == "compile_error"
    lines = [(o.stream, o.text) for o in state.driver_output]
    assert ("stdout", "wrote revision 4") in lines and ("stderr", "bye") in lines
    assert state.driver_finished is not None and state.driver_finished.exit_code == 0
    assert state.outcome == "completed"  # ran to its end: a result, even with nothing passed
    assert state.submission is not None and state.submission.rev is None
    for line in ("rev 2 runtime_error", "rev 3 compile_error", "rev 4 ", "submission: none"):
        assert line in result.stdout


def test_a_command_that_is_not_there_is_an_infrastructure_failure(env: dict[str, str]) -> None:
    session = new_session(env, "--driver", "command", "--command", "no_such_command_d2k --go", *unsandboxed_if_needed())
    cli(env, "session", "run", session["id"])
    state = SessionState.from_events(events(session))
    assert state.driver_finished is not None and state.driver_finished.exit_code == 127
    assert state.outcome == "infrastructure" and "not found" in state.driver_finished.reason
    shown = cli(env, "session", "show", session["id"], "--json")
    assert json.loads(shown.stdout)["outcome"] == "infrastructure"


def test_a_command_that_worked_cannot_pass_its_failure_off_as_a_missing_command(env: dict[str, str]) -> None:
    # an agent that sees its run going badly exits 127 to have it discarded as "command not found" (and rerun
    # by a campaign): a command that changed the workspace is counted as its own failure
    script = (
        "from pathlib import Path; import sys\n"
        "Path('solution.py').write_text('def run(G, steps):\\n    return G\\n')\n"
        "sys.exit(127)"
    )
    session = new_session(env, "--driver", "command", "--command", inline(script), *unsandboxed_if_needed())
    cli(env, "session", "run", session["id"])
    state = SessionState.from_events(events(session))
    assert state.driver_finished is not None and state.driver_finished.exit_code == 127
    assert len(state.revisions) == 2 and state.outcome == "agent_failed"


def test_replay_of_the_shipped_example_reevaluates_every_revision_but_the_template(env: dict[str, str]) -> None:
    store = SessionStore(Path(env["D2K_SESSIONS_DIR"]), EXAMPLES_DIR)
    source_ref = next(ref for ref in store.list() if ref.read_only)
    source = store.load(source_ref).state
    result = cli(env, "replay", source_ref.id, "--device", "cpu", "--workload", TINY)
    assert result.returncode == 0, result.stderr
    replay_id = result.stdout.splitlines()[0].split()[-1]
    replay = store.load(replay_id)
    state = assert_consistent(events({"dir": str(replay.ref.dir)}))
    assert replay.config.driver == "replay" and replay.config.from_session == source_ref.id
    assert len(state.revisions) == len(source.revisions)
    assert state.revisions[1].skip_reason == "template"
    assert all(r.eval_state == "finished" for r in state.ordered()[1:])
    assert [r.replay_of for r in state.ordered()] == [None, *range(2, len(source.revisions) + 1)]
    original, replayed = store.workspace(source_ref), Workspace(replay.ref.workspace)
    for old, new in zip(source.ordered(), state.ordered(), strict=False):
        assert replayed.read_text(new.sha, "solution.py") == original.read_text(old.sha, "solution.py")
        assert new.status is not None or new.rev == 1
    assert state.submission is not None and state.submission.rev is not None


def descendants(pid: int) -> set[int]:
    """Every live process below pid (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def assert_gone(pids: set[int], timeout: float = 10) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        alive = {p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)}
        if not alive:
            return
        time.sleep(0.2)
    raise AssertionError(f"processes outlived the runner: {sorted(alive)}")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def test_kill_9_of_the_runner_ends_the_command_and_all_it_started(env: dict[str, str]) -> None:
    session = new_session(env, "--driver", "command", "--command", "sleep 987 & sleep 986; wait", *unsandboxed_if_needed())
    runner = start(env, "session", "run", session["id"])
    wait_for(session, template_skipped, 60, runner)
    deadline = time.time() + 20
    sleeps = set()
    while len(sleeps) < 2 and time.time() < deadline:
        time.sleep(0.2)
        tree = command_processes(runner.pid, b"sleep 98")  # the shell (and a sandbox) running it, and the sleeps
        sleeps = command_processes(runner.pid, b"sleep\x0098")
    assert len(sleeps) == 2, "the command's two sleeps should be running"
    runner.kill()
    runner.wait(10)
    assert_gone(tree)


def command_processes(pid: int, marker: bytes) -> set[int]:
    """The processes below pid whose command line holds `marker`: the command's own, not the runner's other
    children (git helpers, a checker) that happen to be alive when the tree is read."""
    found = set()
    for child in descendants(pid):
        try:
            if marker in Path(f"/proc/{child}/cmdline").read_bytes():
                found.add(child)
        except OSError:
            continue
    return found


def test_kill_9_mid_evaluation_then_resume(env: dict[str, str]) -> None:
    session = new_session(env, "--driver", "human")
    workspace = Path(session["workspace"])
    runner = start(env, "session", "run", session["id"])
    wait_for(session, template_skipped, 60, runner)
    shutil.copy(HONEST, workspace / "solution.py")
    wait_for(session, started(2), 30, runner)
    time.sleep(1.0)
    checker = descendants(runner.pid)
    assert checker, "the evaluation's checker should be running"
    runner.kill()  # SIGKILL in the middle of revision 2's evaluation
    runner.wait(10)
    assert_gone(checker)  # the checker and its solution process die with the runner
    assert not any(e.type == "eval_finished" and e.rev == 2 for e in events(session))  # type: ignore[union-attr]
    repo = Workspace(workspace)
    (workspace / "solution.py").write_text(SYNTAX_ERROR)  # committed without its revision event...
    repo.commit_all("human", "revision 3")
    (workspace / "solution.py").write_text(BROKEN)  # ...and an edit never committed
    resumed = cli(env, "session", "run", session["id"], "--idle-exit", "2")
    assert resumed.returncode == 0, resumed.stderr
    found = events(session)
    state = assert_consistent(found)
    assert sum(1 for e in found if e.type == "session_started") == 2
    assert [r.rev for r in state.ordered()] == [1, 2, 3, 4]
    assert state.revisions[2].status == "passed" and state.revisions[2].interrupted == 1
    assert state.revisions[3].status == "compile_error" and state.revisions[4].status not in (None, "passed")
    assert [c.sha for c in repo.history()] == [r.sha for r in state.ordered()]
    assert state.submission is not None and state.submission.rev == 2


PROBE = textwrap.dedent("""
    import os, pathlib
    def attempt(label, action):
        try:
            action()
            print(f"{label}: allowed", flush=True)
        except OSError:
            print(f"{label}: denied", flush=True)
    workspace = pathlib.Path(os.environ["D2K_SOLUTION"]).parent
    attempt("read the expert", lambda: pathlib.Path(EXPERT).read_bytes())
    attempt("read the task copy's expert", lambda: pathlib.Path(TASK_EXPERT).read_bytes())
    attempt("read the log", lambda: pathlib.Path(LOG).read_bytes())
    attempt("write the log", lambda: open(LOG, "a").write("{}"))
    attempt("write outside", lambda: pathlib.Path(OUTSIDE).write_text("x"))
    attempt("write the workspace", lambda: (workspace / "notes.txt").write_text("x"))
    attempt("read the results", lambda: pathlib.Path(os.environ["D2K_RESULTS"]).read_bytes())
    key = os.environ["OPENAI_API_KEY"]
    print("my key is", key, flush=True)
    (workspace / ".env").write_text("OPENAI_API_KEY=" + key)
    (workspace / "solution.py").write_text("KEY = " + repr(key) + "\\ndef run(G, steps):\\n    return G\\n")
""")
PLANTED = "sk-planted-0123456789abcdef"


def test_a_sandboxed_command_sees_only_its_workspace_and_leaks_no_key(
    env: dict[str, str], tmp_path: Path, tiny_tasks: Path
) -> None:
    from workbench.harness.host import sandbox

    if sandbox.status("cpu").kind != "bubblewrap":
        pytest.skip(f"the command sandbox cannot start here: {sandbox.status('cpu').detail}")
    env = {**env, "OPENAI_API_KEY": PLANTED}
    outside = Path("/etc/d2k-test-escape.txt")  # read-only in the sandbox wherever the clone lives
    session = new_session(env, "--driver", "command", "--command", "true")
    log = Path(session["dir"]) / "events.jsonl"
    script = (
        PROBE.replace("TASK_EXPERT", repr(str(tiny_tasks / "muon_orthogonalize" / "expert.py")))
        .replace("EXPERT", repr(str(REPO / "tasks" / "muon_orthogonalize" / "expert.py")))
        .replace("LOG", repr(str(log)))
        .replace("OUTSIDE", repr(str(outside)))
    )
    toml = Path(session["dir"]) / "session.toml"
    toml.write_text(toml.read_text().replace('command = "true"', f"command = {json.dumps(inline(script))}"))
    result = cli(env, "session", "run", session["id"])
    assert result.returncode == 1, result.stderr
    state = assert_consistent(events(session))
    said = {o.text for o in state.driver_output}
    for line in (
        "read the expert: denied",
        "read the task copy's expert: denied",
        "read the log: denied",
        "write the log: denied",
        "write outside: denied",
        "write the workspace: allowed",
        "read the results: allowed",
    ):
        assert line in said, said
    assert not outside.exists()
    assert "my key is [redacted OPENAI_API_KEY]" in said
    assert any(e.type == "error" and "revision refused" in e.message and "OPENAI_API_KEY" in e.message for e in state.errors)
    stored = log.read_bytes() + (Path(session["dir"]) / "results.jsonl").read_bytes()
    history = subprocess.run(["git", "log", "-p", "--all"], cwd=session["workspace"], capture_output=True, text=True)
    assert PLANTED.encode() not in stored and PLANTED not in history.stdout
    assert [r.author for r in state.ordered()] == ["template"]
    exported = cli(env, "session", "export", session["id"], str(tmp_path / "exported"))
    assert exported.returncode == 0, exported.stderr
    shipped = Path(exported.stdout.strip())
    assert not (shipped / ".log-key").exists()
    assert all(PLANTED.encode() not in f.read_bytes() for f in shipped.iterdir() if f.is_file())


def test_command_driver_without_a_sandbox_needs_unsandboxed(env: dict[str, str]) -> None:
    env = {**env, "D2K_SANDBOX": "off"}
    refused = cli(env, "session", "new", "muon_orthogonalize", "--device", "cpu", "--driver", "command", "--command", "true")
    assert refused.returncode == 2
    assert "--unsandboxed" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    session = new_session(env, "--driver", "command", "--command", "true", "--unsandboxed")
    assert "unsandboxed = true" in (Path(session["dir"]) / "session.toml").read_text()


def test_a_sessions_root_that_is_a_file_is_one_line_and_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    not_a_folder = tmp_path / "sessions-file"
    not_a_folder.write_text("x")
    for args in (("session", "list"), ("session", "new", "muon_orthogonalize", "--device", "cpu")):
        result = cli({**env, "D2K_SESSIONS_DIR": str(not_a_folder)}, *args)
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1 and "not a folder" in result.stderr


def test_a_task_id_that_is_a_path_is_refused(env: dict[str, str]) -> None:
    result = cli(env, "session", "new", "../tasks/muon_orthogonalize", "--device", "cpu")
    assert result.returncode == 2 and "is not a task id" in result.stderr


def test_a_broken_workspace_repository_ends_the_run_cleanly(env: dict[str, str]) -> None:
    session = new_session(env, "--driver", "human")
    workspace = Path(session["workspace"])
    runner = start(env, "session", "run", session["id"], "--idle-exit", "60")
    wait_for(session, template_skipped, 60, runner)
    (workspace / ".git" / "HEAD").write_text("garbage\n")
    (workspace / "solution.py").write_text(BROKEN)
    runner.wait(60)
    found = events(session)
    broken = [e for e in found if e.type == "error" and "git repository is broken" in e.message]  # type: ignore[union-attr]
    assert len(broken) == 1, [(e.type, getattr(e, "message", "")) for e in found]
    assert found[-1].type == "session_finished"
    assert "Traceback" not in (runner.stderr.read() if runner.stderr else "")


def test_session_list_flags_a_log_with_lines_the_runner_did_not_write(env: dict[str, str]) -> None:
    session = new_session(env, "--driver", "human")
    forged = {"v": 1, "seq": 1, "ts": 0.0, "type": "submission", "rev": 1, "sha": "0" * 40, "reason": "forged"}
    (Path(session["dir"]) / "events.jsonl").write_text(json.dumps(forged) + "\n")
    listed = {row["id"]: row for row in json.loads(cli(env, "session", "list", "--json").stdout)}
    assert listed[session["id"]]["tampered_lines"] == 1
    shown = cli(env, "session", "show", session["id"])
    assert "not written by this session's runner" in shown.stdout
