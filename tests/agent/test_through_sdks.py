"""The agent end to end through the official SDKs: `d2k-workbench run` in a subprocess talks to a real HTTP
server on 127.0.0.1 (tests/llm/fake_servers.py) speaking OpenAI Chat Completions, OpenAI Responses or
Anthropic Messages, and the real runner evaluates every revision on the CPU.

The scripted model reads the task, sends one malformed tool call, writes a wrong kernel, reads the failing
run_tests, meets a 429, writes the honest kernel and submits. The session must pass; each model_call's cost
must equal the hand-computed cost of the usage the server reported; the key must be in no file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm.fake_servers import ErrorReply, FakeModelServer, ModelTurn, ToolCall

from workbench import paths
from workbench.session.eventlog import read_log
from workbench.session.events import EvalFinished, ModelCall, ModelRetry, Submission, ToolResult

pytestmark = pytest.mark.slow  # two CPU evaluations per API

REPO = paths.REPO_ROOT
KEY = "sk-test-never-in-a-file-0123456789abcdef"
WRONG = "def run(G, steps):\n    raise NotImplementedError('a first try')\n"
HONEST = (REPO / "tests" / "solutions" / "muon_naive.py").read_text(encoding="utf-8")

# Per API: the provider option, the fake server's API, a priced model, each turn's usage as the API reports
# it, and the cost of that usage worked out by hand from workbench/llm/prices.toml.
OPENAI_USAGE = {"prompt_tokens": 3000, "completion_tokens": 400, "prompt_tokens_details": {"cached_tokens": 2000}}
RESPONSES_USAGE = {
    "input_tokens": 3000,
    "input_tokens_details": {"cached_tokens": 2000},
    "output_tokens": 400,
    "output_tokens_details": {"reasoning_tokens": 100},
    "total_tokens": 3400,
}
ANTHROPIC_USAGE = {
    "input_tokens": 1000,
    "cache_read_input_tokens": 2000,
    "cache_creation_input_tokens": 500,
    "output_tokens": 400,
}
CASES = {
    # gpt-4.1: $2 input, $0.50 cached, $8 output per million: 1000 x 2 + 2000 x 0.5 + 400 x 8 = 6200 micro-dollars
    "openai": ("openai-chat", "gpt-4.1", OPENAI_USAGE, 6200e-6),
    # reasoning tokens are billed as output: the same 6200
    "openai-responses": ("openai-responses", "gpt-4.1", RESPONSES_USAGE, 6200e-6),
    # claude-sonnet-4: $3 input, $0.30 cache read, $3.75 cache write, $15 output: 3000 + 600 + 1875 + 6000
    "anthropic": ("anthropic", "claude-sonnet-4", ANTHROPIC_USAGE, 11475e-6),
}


def script(api: str, usage: dict[str, object]) -> list[ModelTurn | ErrorReply]:
    first = [ToolCall("read_file", {"path": "task/reference.py"})]
    if api != "anthropic":  # the Messages API always sends an object: a malformed one is an OpenAI case
        first.append(ToolCall("read_file", '{"path": "solution.py"'))  # cut off: not JSON
    return [
        ModelTurn(text="Reading the reference.", tool_calls=first, usage=usage),
        ModelTurn(tool_calls=[ToolCall("write_file", {"path": "solution.py", "content": WRONG})], usage=usage),
        ModelTurn(tool_calls=[ToolCall("run_tests", {})], usage=usage),
        ErrorReply(429, headers={"retry-after": "0"}),
        ModelTurn(tool_calls=[ToolCall("write_file", {"path": "solution.py", "content": HONEST})], usage=usage),
        ModelTurn(tool_calls=[ToolCall("submit", {"note": "straightforward kernels"})], usage=usage),
    ]


@pytest.mark.parametrize("provider", list(CASES))
def test_a_scripted_model_through_the_sdk_gets_a_passing_session(provider: str, tmp_path: Path, tiny_tasks: Path) -> None:
    api, model, usage, cost = CASES[provider]
    sessions = tmp_path / "sessions"
    env = {
        **os.environ,
        "D2K_SESSIONS_DIR": str(sessions),
        "D2K_TASKS_DIR": str(tiny_tasks),
        "PYTHONPATH": str(REPO),
        "OPENAI_API_KEY": KEY,
        "ANTHROPIC_API_KEY": KEY,
    }
    with FakeModelServer(api) as server:  # type: ignore[arg-type]
        server.script(*script(api, usage))
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "run", "muon_orthogonalize", "--provider", provider, "--model", model,
             "--base-url", server.base_url, "--device", "cpu", "--max-turns", "10"],
            env=env, capture_output=True, text=True, timeout=300, cwd=REPO,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert server.remaining == 0
    session_dir = sessions / done.stdout.splitlines()[0].removeprefix("session ")
    events = read_log(session_dir / "events.jsonl").events
    calls = [e for e in events if isinstance(e, ModelCall)]
    assert [c.turn for c in calls] == [1, 2, 3, 4, 5]
    assert all(c.cost_usd == pytest.approx(cost) for c in calls)
    assert [e.status for e in events if isinstance(e, ModelRetry)] == [429]
    results = [e for e in events if isinstance(e, ToolResult)]
    if api != "anthropic":
        assert not results[1].ok and "turns left" in results[1].content  # the malformed call: an error result
    assert any("runtime_error" in r.content for r in results)  # run_tests reported the wrong kernel to the model
    statuses = {e.rev: e.report.status for e in events if isinstance(e, EvalFinished)}
    assert statuses[2] == "runtime_error" and statuses[3] == "passed"
    assert [e.rev for e in events if isinstance(e, Submission)][-1] == 3
    for path in session_dir.rglob("*"):  # the key is in no file, the workspace's git objects included
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    history = subprocess.run(["git", "log", "-p", "--all"], cwd=session_dir / "workspace", capture_output=True, text=True)
    assert history.returncode == 0 and "def run" in history.stdout and KEY not in history.stdout


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_bad_key_ends_the_session_cleanly_with_exit_2_and_one_line(provider: str, tmp_path: Path, tiny_tasks: Path) -> None:
    api, model, _, _ = CASES[provider]
    sessions = tmp_path / "sessions"
    env = {**os.environ, "D2K_SESSIONS_DIR": str(sessions), "D2K_TASKS_DIR": str(tiny_tasks), "PYTHONPATH": str(REPO)}
    env |= {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    with FakeModelServer(api) as server:  # type: ignore[arg-type]
        server.script(ErrorReply(401))
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "run", "muon_orthogonalize", "--provider", provider, "--model", model,
             "--base-url", server.base_url, "--device", "cpu"],
            env=env, capture_output=True, text=True, timeout=300, cwd=REPO,
        )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "401" in errors[0] and KEY not in done.stderr + done.stdout
    session_dir = sessions / done.stdout.splitlines()[0].removeprefix("session ")
    events = read_log(session_dir / "events.jsonl").events
    assert [e.type for e in events][-1] == "session_finished"
    assert any(e.type == "error" for e in events) and not any(isinstance(e, ModelCall) for e in events)
