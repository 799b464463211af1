"""Agent sessions end to end on the CPU: the CLI in subprocesses, the scripted Muon model
(`python -m workbench.cli.scripted`, the CLI with agent sessions answered by `muon_script`), the real
runner and the real harness on a small copy of the Muon task."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench import paths
from workbench.session.eventlog import read_log
from workbench.session.events import EvalFinished, EvalSkipped, EvalStarted, Event, ModelCall, Submission, ToolCall, ToolResult
from workbench.session.state import SessionState

from .helpers import of

pytestmark = pytest.mark.slow  # CPU evaluations of real kernels

REPO = paths.REPO_ROOT


@pytest.fixture
def env(tmp_path: Path, tiny_tasks: Path) -> dict[str, str]:
    return {
        **os.environ,
        "D2K_SESSIONS_DIR": str(tmp_path / "sessions"),
        "D2K_TASKS_DIR": str(tiny_tasks),
        "PYTHONPATH": str(REPO),
        "OPENAI_API_KEY": "sk-never-used-0123456789abcdef",
    }


def scripted_cli(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli.scripted", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def assert_complete(events: list[Event]) -> None:
    """Turn numbers unique and consecutive; every tool call has exactly one result."""
    turns = [c.turn for c in of(events, ModelCall)]
    assert turns == list(range(1, len(turns) + 1)), turns
    calls = sorted((c.turn, c.call_id) for c in of(events, ToolCall))
    results = sorted((r.turn, r.call_id) for r in of(events, ToolResult))
    assert calls == results


def test_run_honest_scripted_session_passes(env: dict[str, str], tmp_path: Path) -> None:
    done = scripted_cli(
        env,
        "run",
        "muon_orthogonalize",
        "--provider",
        "openai",
        "--model",
        "scripted-muon",
        "--allow-unpriced",
        "--device",
        "cpu",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    session_id = lines[0].removeprefix("session ")
    assert lines[1].startswith("turn 1/350  list_files  tokens 1000 in / 200 out  cost n/a  evals")
    assert any(line.startswith("turn 7/350  submit") for line in lines)
    assert any(line.startswith("submission: rev 3") for line in lines)
    assert lines[-1] == f"session {session_id}: 7 turn(s)"
    events = read_log(tmp_path / "sessions" / session_id / "events.jsonl").events
    assert_complete(events)
    statuses = {e.rev: e.report.status for e in of(events, EvalFinished)}
    assert statuses == {2: "incorrect_numerical", 3: "passed"}  # revision 1, the untouched template, is not evaluated
    assert [(e.rev, e.reason) for e in of(events, EvalSkipped)] == [(1, "template")]
    results = of(events, ToolResult)
    assert "incorrect_numerical" in results[4].content  # the first run_tests: the model read the failure
    assert of(events, Submission)[-1].rev == 3


def test_a_killed_agent_session_resumes_without_paying_a_turn_twice_or_losing_a_result(env: dict[str, str]) -> None:
    created = subprocess.run(
        [sys.executable, "-m", "workbench", "session", "new", "muon_orthogonalize", "--driver", "agent", "--provider", "openai",
         "--model", "scripted-muon", "--allow-unpriced", "--device", "cpu"],
        env=env, capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    session_id, workspace = created.stdout.split()
    log = Path(workspace).parent / "events.jsonl"
    runner = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli.scripted", "session", "run", session_id],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
    )  # fmt: skip

    def run_tests_waiting(events: list[Event]) -> bool:  # the first run_tests is waiting for revision 2's evaluation
        calls = [c for c in of(events, ToolCall) if c.name == "run_tests"]
        started = any(e.rev == 2 for e in of(events, EvalStarted))
        return bool(calls) and started and not any(r.call_id == calls[0].call_id for r in of(events, ToolResult))

    deadline = time.time() + 120
    while not run_tests_waiting(read_log(log).events):
        assert runner.poll() is None and time.time() < deadline, "the runner ended before run_tests waited"
        time.sleep(0.1)
    runner.send_signal(signal.SIGKILL)  # mid-evaluation, mid-tool-call
    runner.wait()
    before = read_log(log).events
    assert not SessionState.from_events(before).finished
    paid = len(of(before, ModelCall))
    assert paid == 4

    done = scripted_cli(env, "session", "run", session_id)
    assert done.returncode == 0, done.stdout + done.stderr
    events = read_log(log).events
    assert_complete(events)
    assert len(of(events, ModelCall)) == 7  # turns 1-4 from the first run, 5-7 after the resume
    run_tests = [c for c in of(events, ToolCall) if c.name == "run_tests"]
    assert len(run_tests) == 2  # the interrupted call was logged once and answered after the resume
    answer = next(r for r in of(events, ToolResult) if r.call_id == run_tests[0].call_id)
    assert answer.seq > before[-1].seq and "incorrect_numerical" in answer.content
    first_call_after = next(e for e in events if e.seq > before[-1].seq and isinstance(e, ModelCall))
    assert first_call_after.turn == 5 and first_call_after.seq > answer.seq  # the result came before the next model call
    assert {e.rev for e in of(events, EvalFinished)} == {2, 3}  # the template is never evaluated
    assert of(events, Submission)[-1].rev == 3
