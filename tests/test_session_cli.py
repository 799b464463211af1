"""The session commands a new user meets after `session new`/`run`: logs, diff, stop, rm, export, and
`session run`'s output, as a user sees them (stdout, stderr, exit codes, files). Sessions are synthetic
(workbench.session.testing, written through the real EventWriter); the only processes started are a
command driver's `echo` and, for `session stop`, one real `session run` whose evaluations are faked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench import paths
from workbench.cli import app
from workbench.errors import UsageError
from workbench.harness.protocol.report import EvalReport
from workbench.llm.usage import Usage
from workbench.session.diff import revision_diff, revision_shas
from workbench.session.eventlog import EventWriter, read_log
from workbench.session.events import (
    EVENT_TYPES,
    DriverFinished,
    DriverOutput,
    ModelCall,
    SessionFinished,
    SessionStarted,
)
from workbench.session.layout import SessionRef
from workbench.session.logs import LogNote, parse_types, session_log
from workbench.session.runner import stop_on_signals
from workbench.session.store import SessionStore
from workbench.session.testing import finished_session, new_session, timed_report, write_events

cli = CliRunner()
TASK = "muon_orthogonalize"
SOLUTIONS = [
    "def run(G, steps):\n    return G\n",
    "def run(G, steps):\n    return G.half()\n",
    "def run(G, steps):\n    return G.half()\n",
]


def report(rev: int) -> EvalReport:
    return timed_report(TASK, {"w1": (1.0, 2.0 * rev)}, device="cpu", duration_s=0.5)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def finished(root: Path) -> SessionRef:
    """A finished command session: three revisions (the third the same as the second), each passed."""
    return finished_session(root, TASK, SOLUTIONS, report)


def run(root: Path, *args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    result = cli.invoke(app, ["session", *args, "--sessions-dir", str(root)], input=input)
    assert "Traceback" not in result.output, result.output
    return result


# ---- session logs -----------------------------------------------------------------------------------


def test_logs_prints_one_line_per_event_with_driver_output_and_model_turns(root: Path, finished: SessionRef) -> None:
    write_events(
        finished,
        [
            DriverOutput(stream="stdout", text="    indented agent line"),
            DriverOutput(stream="stderr", text="a warning"),
            ModelCall(turn=2, model="m-1", usage=Usage(uncached_input=10, output=5), latency_s=1.5, text="thinking\nmore"),
        ],
    )
    result = run(root, "logs", finished.id[-4:])
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == len(read_log(finished.log_path).events) == 16
    assert lines[0].split()[0] == "1" and "session_started" in lines[0]
    assert any("eval_finished" in line and "rev 2 passed" in line and "speedup 4.00x" in line for line in lines)
    assert any(line.endswith("stdout:     indented agent line") for line in lines)  # the indentation kept
    assert any("driver_output" in line and "stderr: a warning" in line for line in lines)
    assert any(line.endswith("turn 2 m-1: 10 in / 5 out 1.5 s: thinking …") for line in lines)
    assert "submission: rev 3" in result.stdout


def test_logs_type_filter_and_json(root: Path, finished: SessionRef) -> None:
    write_events(finished, [DriverOutput(stream="stdout", text="hello")])
    result = run(root, "logs", finished.id, "--type", "eval_finished", "-t", "submission,driver_output")
    assert result.exit_code == 0
    kinds = [line.split()[2] for line in result.stdout.splitlines()]
    assert kinds == ["eval_finished"] * 3 + ["submission", "driver_output"]
    as_json = run(root, "logs", finished.id, "--json", "--type", "driver_output")
    assert as_json.exit_code == 0
    (record,) = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert record["type"] == "driver_output" and record["text"] == "hello" and "mac" not in record


def test_logs_refuses_an_unknown_type_listing_the_valid_ones_and_an_unknown_session(root: Path, finished: SessionRef) -> None:
    bad = run(root, "logs", finished.id, "--type", "eval_done")
    assert bad.exit_code == 2 and bad.stdout == ""
    assert "unknown event type 'eval_done'" in bad.stderr
    assert all(kind in bad.stderr.replace("\n", "") for kind in ("driver_output", "eval_finished", "session_finished"))
    missing = run(root, "logs", "nope")
    assert missing.exit_code == 2 and "no session 'nope'" in missing.stderr
    with pytest.raises(UsageError, match="valid types"):
        parse_types(["revision", "bogus"])
    assert parse_types([]) is None and parse_types(["revision,error"]) == {"revision", "error"}
    assert set(EVENT_TYPES) >= {"driver_output", "model_call", "model_retry", "eval_finished"} and len(EVENT_TYPES) == 19


def test_logs_follow_prints_events_as_they_come_and_ends_with_the_runner(root: Path) -> None:
    ref = new_session(root, TASK, SOLUTIONS[0])
    writer = EventWriter(ref.dir, secrets={})  # holds the session lock as a runner does
    writer.append(SessionStarted(task=TASK, guidance="none", driver="command", device="cpu"))

    def later() -> None:
        time.sleep(0.7)
        writer.append(DriverOutput(stream="stdout", text="step one"))
        time.sleep(0.7)
        writer.append(DriverFinished(driver="command", reason="done", exit_code=0))
        writer.append(SessionFinished(reason="done"))
        writer.close()

    thread = threading.Thread(target=later)
    began = time.monotonic()
    thread.start()
    try:
        result = run(root, "logs", ref.id, "--follow")
    finally:
        thread.join()
    assert result.exit_code == 0, result.output
    assert time.monotonic() - began < 5
    assert [line.split()[2] for line in result.stdout.splitlines()] == [
        "session_started",
        "driver_output",
        "driver_finished",
        "session_finished",
    ]
    assert result.stderr == ""
    again = run(root, "logs", ref.id, "-f")  # finished and not being run: prints and returns at once
    assert again.exit_code == 0 and len(again.stdout.splitlines()) == 4


def test_follow_waits_for_a_runner_and_notes_one_that_ends_without_finishing(root: Path) -> None:
    store = SessionStore(root, examples=None)
    ref = new_session(root, TASK, SOLUTIONS[0])
    writer: list[EventWriter] = []

    def sleep(_: float) -> None:  # each poll of the follower: first a runner starts, then it dies mid-run
        if not writer:
            writer.append(EventWriter(ref.dir, secrets={}))
            writer[0].append(SessionStarted(task=TASK, guidance="none", driver="command", device="cpu"))
        else:
            writer[0].close()

    items = list(session_log(store, ref, follow=True, sleep=sleep))
    assert [type(i).__name__ for i in items] == ["LogNote", "SessionStarted", "LogNote"]
    first, last = items[0], items[2]
    assert isinstance(first, LogNote) and "waiting for a runner" in first.message
    assert isinstance(last, LogNote) and "without finishing the session" in last.message


def test_logs_of_a_session_never_run_says_so(root: Path) -> None:
    ref = new_session(root, TASK, SOLUTIONS[0])
    result = run(root, "logs", ref.id)
    assert result.exit_code == 0 and result.stdout == ""
    assert f"session {ref.id} has no events yet" in " ".join(result.stderr.split())


def test_logs_of_a_log_with_a_foreign_line_notes_it_on_stderr(root: Path, finished: SessionRef) -> None:
    with finished.log_path.open("a") as log:
        log.write('{"v":1,"seq":14,"ts":0,"type":"error","message":"forged"}\n')
    result = run(root, "logs", finished.id)
    assert result.exit_code == 0 and "forged" not in result.stdout
    assert "line 14 skipped" in result.stderr


# ---- session run: the driver's output ----------------------------------------------------------------


@pytest.fixture
def fake_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every evaluation of `session run` reports a pass at once (no harness process)."""
    from workbench.session import runner

    monkeypatch.setattr(runner, "harness_evaluator", lambda task, *args, **kwargs: lambda path: report(1))


@pytest.mark.parametrize("quiet", [False, True])
def test_session_run_prints_the_commands_output_unless_quiet(root: Path, fake_harness: None, quiet: bool) -> None:
    command = "echo hello from the agent; echo a complaint >&2; printf 'x = 1\\n' >> solution.py"
    created = run(root, "new", TASK, "--driver", "command", "--command", command, "--unsandboxed", "--device", "cpu", "--json")
    assert created.exit_code == 0, created.output
    session = json.loads(created.stdout)["id"]
    result = run(root, "run", session, *(["--quiet"] if quiet else []))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "rev 1 not evaluated: the task's untouched template" in out and "rev 2 passed" in out
    assert "session finished: the command exited with code 0" in out
    if quiet:
        assert "hello from the agent" not in out and "a complaint" not in out
    else:
        assert "stdout: hello from the agent" in out and "stderr: a complaint" in out
        assert out.index("stdout: hello from the agent") < out.index("driver command finished")


# ---- session stop ------------------------------------------------------------------------------------

FAKE_RUNNER = """
import sys
from workbench.session import runner
from workbench.session.testing import timed_report
runner.harness_evaluator = lambda task, *a, **k: lambda path: timed_report(task.id, {"w1": (1.0, 2.0)}, device="cpu")
sys.argv = ["d2k-workbench", *sys.argv[1:]]
from workbench.cli import main
main()
"""


@pytest.mark.slow  # a real runner process until it is stopped (3-4 s on a 2-core CPU)
def test_stop_ends_a_running_session_cleanly_and_says_so(root: Path) -> None:
    store = SessionStore(root, examples=None)
    created = run(root, "new", TASK, "--driver", "human", "--device", "cpu", "--json")
    session = json.loads(created.stdout)
    ref = store.resolve(session["id"])
    env = {**os.environ, "PYTHONPATH": str(paths.REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", FAKE_RUNNER, "session", "run", ref.id, "--sessions-dir", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(e.type == "eval_skipped" for e in read_log(ref.log_path).events):  # the runner is up
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the runner did not start"
            time.sleep(0.1)
        with (ref.workspace / "solution.py").open("a") as solution:
            solution.write("# an edit\n")
        while not any(e.type == "eval_finished" for e in read_log(ref.log_path).events):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the runner did not evaluate the edit"
            time.sleep(0.1)
        result = run(root, "stop", ref.id[:12] + ref.id[12:], "--wait", "30")
        assert result.exit_code == 0, result.output
        assert f"session {ref.id} stopped: stopped; stopped by SIGTERM; submission: rev 2" in result.stdout
        assert f"pid {process.pid}" in result.stderr
        out, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0  # the runner ended as after Ctrl-C: its submission passed
    assert "session finished: stopped; stopped by SIGTERM" in out
    events = read_log(ref.log_path).events
    assert [e.type for e in events[-3:]] == ["driver_finished", "submission", "session_finished"]
    again = run(root, "stop", ref.id)
    assert again.exit_code == 1 and f"session {ref.id} is not running (it finished: stopped; stopped by SIGTERM)" in again.stderr


def test_a_repeated_sigterm_does_not_abort_the_run_but_a_second_ctrl_c_does() -> None:
    class Stoppable:
        def __init__(self) -> None:
            self.stop = threading.Event()
            self.reasons: list[str] = []

        def request_stop(self, reason: str) -> None:
            self.reasons.append(reason)
            self.stop.set()

    stoppable = Stoppable()
    with stop_on_signals(stoppable):  # type: ignore[arg-type]
        for _ in range(2):  # `session stop` twice: the run still ends with its submission
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert stoppable.reasons == ["stopped by SIGTERM"]


def test_the_first_ctrl_c_says_at_once_what_happens_next_with_the_session_id() -> None:
    """Issue 30, item 10: the first Ctrl-C was silent for as long as an evaluation took to finish."""

    class Busy:
        def __init__(self) -> None:
            self.stop = threading.Event()
            self.config = type("Config", (), {"id": "20261202-000000-muon_orthogonalize-abcd"})()

        def request_stop(self, reason: str) -> None:
            self.stop.set()

        def busy_evaluating(self) -> bool:
            return True

    told: list[str] = []
    busy = Busy()
    with stop_on_signals(busy, on_stop=told.append):  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    assert len(told) == 1
    assert busy.config.id in told[0] and "evaluation under way finishes first" in told[0] and "Ctrl-C again" in told[0]


STUBBORN_RUNNER = """
import signal, sys, time
from pathlib import Path
from workbench.session.eventlog import EventWriter
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a runner busy with a long evaluation, as far as `stop` can tell
writer = EventWriter(Path(sys.argv[1]), secrets={})
print("locked", flush=True)
time.sleep(60)
"""


def test_stop_says_when_the_runner_is_still_finishing_after_the_wait(root: Path) -> None:
    ref = new_session(root, TASK, SOLUTIONS[0])
    env = {**os.environ, "PYTHONPATH": str(paths.REPO_ROOT)}
    process = subprocess.Popen([sys.executable, "-c", STUBBORN_RUNNER, str(ref.dir)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "locked\n"
        began = time.monotonic()
        waited = run(root, "stop", ref.id, "--wait", "0.5")
        assert waited.exit_code == 1 and time.monotonic() - began < 5
        assert f"(pid {process.pid}) is still finishing queued evaluations after 0.5 s" in " ".join(waited.stderr.split())
        asked = run(root, "stop", ref.id, "--wait", "0")
        assert asked.exit_code == 0 and f"asked the runner of {ref.id} (pid {process.pid}) to stop" in asked.stdout
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


def test_stop_of_a_session_not_being_run_exits_1(root: Path, finished: SessionRef) -> None:
    never = new_session(root, TASK, SOLUTIONS[0])
    result = run(root, "stop", never.id)
    assert result.exit_code == 1 and "is not running (`d2k-workbench session run" in result.stderr
    done = run(root, "stop", finished.id)
    assert done.exit_code == 1 and "it finished: the command exited with code 0" in done.stderr
    example = run(root, "stop", "eab7")
    assert example.exit_code == 1 and "shipped example" in example.stderr
    assert run(root, "stop", "nope").exit_code == 2


# ---- session rm --------------------------------------------------------------------------------------


def test_rm_asks_first_and_deletes_only_when_told(root: Path, finished: SessionRef) -> None:
    kept = run(root, "rm", finished.id, input="n\n")
    assert kept.exit_code == 1 and "nothing deleted" in kept.stderr and finished.dir.is_dir()
    assert f"delete session {finished.id}" in kept.stderr and "3 revision(s)" in kept.stderr
    unanswered = run(root, "rm", finished.id)  # stdin closed: no answer is no
    assert unanswered.exit_code == 1 and finished.dir.is_dir()
    deleted = run(root, "rm", finished.id, input="y\n")
    assert deleted.exit_code == 0 and f"deleted session {finished.id}" in deleted.stdout
    assert not finished.dir.exists()
    other = new_session(root, TASK, SOLUTIONS[0])
    assert run(root, "rm", other.id, "--yes").exit_code == 0 and not other.dir.exists()
    assert run(root, "list", "--json").stdout.count(other.id) == 0
    assert run(root, "rm", other.id, "--yes").exit_code == 2  # gone: no session by that id


def test_rm_refuses_a_shipped_example_and_a_running_session(
    root: Path, finished: SessionRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.session import remove

    def never(path: Path) -> None:
        raise AssertionError(f"rmtree({path}) was called")

    monkeypatch.setattr(remove.shutil, "rmtree", never)  # the shipped example must survive a broken check
    example = run(root, "rm", "eab7", "--yes")
    assert example.exit_code == 2 and "shipped example and read-only" in example.stderr
    with EventWriter(finished.dir, secrets={}):
        running = run(root, "rm", finished.id, "--yes")
    assert running.exit_code == 2 and f"stop it first: d2k-workbench session stop {finished.id}" in running.stderr
    assert finished.dir.is_dir()


# ---- session diff ------------------------------------------------------------------------------------


def test_diff_between_two_revisions_of_the_solution(root: Path, finished: SessionRef) -> None:
    shas = revision_shas(finished.dir)
    assert sorted(shas) == [1, 2, 3]
    text = revision_diff(finished.dir, 1, 2)
    assert text == (
        f"--- a/solution.py\trev 1 {shas[1][:10]}\n"
        f"+++ b/solution.py\trev 2 {shas[2][:10]}\n"
        "@@ -1,2 +1,2 @@\n"
        " def run(G, steps):\n"
        "-    return G\n"
        "+    return G.half()\n"
    )
    assert revision_diff(finished.dir, 2, 3) == ""
    result = run(root, "diff", finished.id, "2", "1")
    assert result.exit_code == 0 and "-    return G.half()\n+    return G\n" in result.stdout
    same = run(root, "diff", finished.id, "2", "3")
    assert same.exit_code == 0 and same.stdout == "" and "hold the same solution" in same.stderr


def test_diff_refuses_revisions_the_session_does_not_have(root: Path, finished: SessionRef) -> None:
    for a, b in (("1", "4"), ("0", "2")):
        result = run(root, "diff", finished.id, a, b)
        assert result.exit_code == 2 and result.stdout == ""
        assert "its revisions are 1..3" in result.stderr
    assert run(root, "diff", finished.id, "one", "2").exit_code == 2  # not a number: typer's usage error
    assert run(root, "diff", "nope", "1", "2").exit_code == 2
    never_run = new_session(root, TASK, SOLUTIONS[0])  # no log yet: revision 1 is the first commit
    assert revision_diff(never_run.dir, 1, 1) == ""
    with pytest.raises(UsageError, match=r"no revision 2; its revisions are 1..1"):
        revision_diff(never_run.dir, 1, 2)


def test_diff_reads_a_shipped_example_from_its_bundle(root: Path) -> None:
    result = run(root, "diff", "eab7", "1", "2")
    assert result.exit_code == 0 and result.stdout.startswith("--- a/solution.py\trev 1 ")
    assert "+@triton.jit" in result.stdout


# ---- session export ----------------------------------------------------------------------------------


def test_export_writes_exactly_dest_and_refuses_a_folder_that_is_not_empty(
    root: Path, finished: SessionRef, tmp_path: Path
) -> None:
    dest = tmp_path / "out" / "shipped"
    result = run(root, "export", finished.id, str(dest))
    assert result.exit_code == 0 and result.stdout == f"{dest}\n"
    assert sorted(p.name for p in dest.iterdir()) == ["events.jsonl", "session.toml", "workspace.bundle"]
    again = run(root, "export", finished.id, str(dest))
    assert again.exit_code == 2 and "exists and is not empty" in again.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(root, "export", finished.id, str(empty)).exit_code == 0 and (empty / "events.jsonl").is_file()
    file = tmp_path / "file"
    file.write_text("x")
    not_folder = run(root, "export", finished.id, str(file))
    assert not_folder.exit_code == 2 and "is not a folder" in not_folder.stderr
    never_run = new_session(root, TASK, SOLUTIONS[0])
    unrun = run(root, "export", never_run.id, str(tmp_path / "unrun"))
    assert unrun.exit_code == 2 and "no event log yet" in unrun.stderr and not (tmp_path / "unrun").exists()


# ---- session new --device cuda without a GPU ---------------------------------------------------------


@pytest.mark.parametrize("command", [["session", "new", TASK], ["replay", "eab7"]])
def test_cuda_on_a_machine_without_one_fails_at_once(root: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = cli.invoke(app, [*command, "--device", "cuda", "--sessions-dir", str(root)])
    assert result.exit_code == 2, result.output
    assert "no CUDA device is available" in result.stderr and "--device cpu" in result.stderr
    assert not root.exists() or not any(root.iterdir())  # no session was created


def test_the_new_commands_have_help() -> None:
    for command in ("logs", "diff", "stop", "rm", "export"):
        result = cli.invoke(app, ["session", command, "--help"])
        assert result.exit_code == 0 and "Exit code" in " ".join(result.stdout.split()), command
    logs_help = "".join(cli.invoke(app, ["session", "logs", "--help"]).stdout.split())
    assert all(kind in logs_help for kind in EVENT_TYPES)  # the help's list of types is the events module's


# -- setting a session aside (issue 29) -----------------------------------------------------------
def test_exclude_needs_a_reason_and_include_undoes_it(root: Path) -> None:
    ref = finished_session(root, TASK, SOLUTIONS[:2], report)
    no_reason = run(root, "exclude", ref.id, "--reason", "  ")
    assert no_reason.exit_code == 2 and "--reason" in no_reason.stderr
    assert run(root, "include", ref.id).exit_code == 1  # not excluded: nothing recorded
    excluded = run(root, "exclude", ref.id, "--reason", "ran  on a throttled GPU")
    assert excluded.exit_code == 0 and "excluded: ran on a throttled GPU" in excluded.stdout
    shown = json.loads(run(root, "show", ref.id, "--json").stdout)
    assert shown["excluded"] == "ran on a throttled GPU" and shown["outcome"] == "completed"
    assert "excluded" in run(root, "show", ref.id).stdout
    included = run(root, "include", ref.id, "--reason", "re-checked")
    assert included.exit_code == 0 and "counts again" in included.stdout
    assert json.loads(run(root, "show", ref.id, "--json").stdout)["excluded"] is None
    types = [e.type for e in read_log(ref.dir / "events.jsonl").events]
    assert types[-2:] == ["session_excluded", "session_included"]
    assert run(root, "exclude", "nope", "--reason", "x").exit_code == 2


def test_a_replay_keeps_the_recorded_guidance_and_refuses_another(root: Path) -> None:
    source = finished_session(root, TASK, SOLUTIONS[:2], report, guidance="L1+L2")
    replay = ["session", "new", TASK, "--driver", "replay", "--from", source.id, "--sessions-dir", str(root)]
    refused = cli.invoke(app, [*replay, "--guidance", "none"])
    assert refused.exit_code == 2 and "keeps the recorded session's guidance" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) <= 2 and "Traceback" not in refused.output
    made = cli.invoke(app, [*replay, "--json"])
    assert made.exit_code == 0, made.output
    made_id = json.loads(made.stdout)["id"]
    assert json.loads(run(root, "show", made_id, "--json").stdout)["guidance"] == "L1+L2"


# ---- root folders given before the subcommand (issue 30, item 2) ----------------------------------------------


def test_a_sessions_dir_before_the_subcommand_reaches_it(
    root: Path, finished: SessionRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("D2K_SESSIONS_DIR", str(root.parent / "elsewhere"))  # the flag wins over the environment
    result = cli.invoke(app, ["--sessions-dir", str(root), "session", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert finished.id in {row["id"] for row in json.loads(result.stdout)}
    shown = cli.invoke(app, ["--sessions-dir", str(root), "session", "show", finished.id])
    assert shown.exit_code == 0 and finished.id in shown.stdout
    # the subcommand's own option still wins over the one before it
    own = cli.invoke(
        app, ["--sessions-dir", str(root.parent / "nothing"), "session", "list", "--json", "--sessions-dir", str(root)]
    )
    assert finished.id in {row["id"] for row in json.loads(own.stdout)}
    # and without a flag the environment variable is the root
    monkeypatch.setenv("D2K_SESSIONS_DIR", str(root))
    from_env = cli.invoke(app, ["session", "list", "--json"])
    assert finished.id in {row["id"] for row in json.loads(from_env.stdout)}


def test_a_tasks_dir_before_the_subcommand_reaches_it(tmp_path: Path) -> None:
    missing = cli.invoke(app, ["--tasks-dir", str(tmp_path / "none"), "tasks"])
    assert missing.exit_code == 2 and "tasks folder not found" in missing.output
    guidance = cli.invoke(app, ["--guidance-dir", str(tmp_path / "none"), "guidance", "muon_orthogonalize"])
    assert guidance.exit_code == 2, guidance.output


# ---- campaign sessions under the sessions root (issue 30, item 1) -------------------------------------------


def test_a_campaigns_sessions_are_listed_shown_and_reported_with_the_root(root: Path, finished: SessionRef) -> None:
    """The shipped campaign files keep their sessions in <root>/campaigns/<name>/: `session list`, `show`
    and the default `report` see them, marked with the campaign's name."""
    campaign = finished_session(root / "campaigns" / "paper-matrix", TASK, SOLUTIONS, report)
    listed = run(root, "list", "--json")
    assert listed.exit_code == 0, listed.output
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert rows[campaign.id]["campaign"] == "paper-matrix" and rows[finished.id]["campaign"] is None
    table = run(root, "list")
    assert "(paper-matrix)" in table.stdout
    shown = run(root, "show", campaign.id)
    assert shown.exit_code == 0 and campaign.id in shown.stdout
    reported = cli.invoke(app, ["report", "--sessions-dir", str(root), "--format", "json"])
    assert reported.exit_code == 0, reported.output
    assert campaign.id in reported.stdout and finished.id in reported.stdout
    # the campaign's own records folder (.campaign-<name>) and stray files are not sessions
    (root / "campaigns" / ".campaign-paper-matrix").mkdir()
    (root / "campaigns" / "notes.txt").write_text("x")
    assert {row["id"] for row in json.loads(run(root, "list", "--json").stdout)} == set(rows)


# ---- a sessions folder that cannot be written (issue 30, item 5) ---------------------------------------------


def test_a_sessions_folder_that_cannot_be_written_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    root = blocker / "sessions"  # a file where a folder should be (permissions do not stop root, this does)
    result = cli.invoke(app, ["session", "new", "muon_orthogonalize", "--device", "cpu", "--sessions-dir", str(root)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "cannot create the session" in result.output
    ran = cli.invoke(app, ["run", "muon_orthogonalize", "--device", "cpu", "--sessions-dir", str(root)])
    assert ran.exit_code == 2 and "Traceback" not in ran.output, ran.output


def test_a_write_that_fails_half_way_leaves_no_session_behind(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    def read_only(*_: object, **__: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("workbench.session.create.write_config", read_only)
    result = run(root, "new", "muon_orthogonalize", "--device", "cpu")
    assert result.exit_code == 2 and "Read-only file system" in result.output, result.output
    assert not any(root.iterdir()) if root.exists() else True


def test_follow_of_a_finished_session_with_later_events_returns_at_once(root: Path, finished: SessionRef) -> None:
    """Issue 30, item 12: a session judged, reviewed or excluded after it finished has a log that goes on after
    session_finished; `logs --follow` waited for a runner forever."""
    assert run(root, "exclude", finished.id, "--reason", "a test").exit_code == 0
    store = SessionStore(root, examples=None)

    def sleep(_: float) -> None:
        raise AssertionError("--follow waited on a finished session")

    items = list(session_log(store, finished, follow=True, sleep=sleep))
    assert type(items[-1]).__name__ == "SessionExcluded"


# ---- session compare (issue 30, compare two sessions) -------------------------------------------------------


def test_compare_two_sessions_side_by_side_with_the_diff_and_a_plot(root: Path, finished: SessionRef, tmp_path: Path) -> None:
    other = finished_session(root, TASK, [SOLUTIONS[0], "def run(G, steps):\n    return G.float().half()\n"], report)
    result = run(root, "compare", finished.id, other.id)
    assert result.exit_code == 0, result.output
    assert finished.id in result.stdout and other.id in result.stdout
    assert "final speedup" in result.stdout and "w1 (ms)" in result.stdout
    assert "-    return G.half()" in result.stdout and "+    return G.float().half()" in result.stdout
    data = json.loads(run(root, "compare", finished.id, other.id, "--json").stdout)
    first, second = data["sessions"]
    assert first["id"] == finished.id and first["revisions"] == 3 and second["revisions"] == 2
    assert [p["rev"] for p in first["speedup_by_revision"]] == [1, 2, 3] and first["workloads_ms"]["w1"] == pytest.approx(1.0)
    assert data["diff"].startswith("--- a/solution.py")
    plot = tmp_path / "curves.png"
    assert run(root, "compare", finished.id, other.id, "--plot", str(plot)).exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    same = run(root, "compare", finished.id, finished.id)
    assert same.exit_code == 2 and "the same session" in same.output
    bad = run(root, "compare", finished.id, other.id, "--plot", str(tmp_path / "x.txt"))
    assert bad.exit_code == 2 and ".png" in bad.output
    unknown = run(root, "compare", finished.id, "nope")
    assert unknown.exit_code == 2 and "no session" in unknown.output
