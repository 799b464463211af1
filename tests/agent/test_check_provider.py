"""The provider check (issue 30): `d2k-workbench check-provider`, and the first step of `run` and `design`,
through the official SDKs against a fake server on 127.0.0.1 that speaks the real wire format. A wrong base
URL used to cost a minute of retries and leave a failed session behind."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from llm.fake_servers import ErrorReply, FakeModelServer
from typer.testing import CliRunner

from workbench.cli import app

KEY = "sk-test-never-in-a-file-0123456789abcdef"
APIS = {"openai": "openai-chat", "openai-responses": "openai-responses", "anthropic": "anthropic"}
MODELS = {"openai": "gpt-4.1", "openai-responses": "gpt-4.1", "anthropic": "claude-sonnet-4"}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["check-provider", *args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("provider", sorted(APIS))
def test_a_working_provider_passes_every_step(keys: None, provider: str) -> None:
    with FakeModelServer(APIS[provider]) as server:  # type: ignore[arg-type]
        code, out = check("--provider", provider, "--model", MODELS[provider], "--base-url", server.base_url, "--json")
        assert code == 0, out
        data = json.loads(out)
        assert data["ok"] and [s["step"] for s in data["steps"]] == ["price", "client", "call", "tool call"]
        assert "called the tool" in data["steps"][-1]["detail"]
        assert len(server.probes) == 1 and server.requests == []  # one call, with the probe tool offered
        assert KEY not in out


def test_nothing_listening_fails_at_once_with_what_to_check(keys: None) -> None:
    with FakeModelServer("openai-chat") as gone:
        base_url = gone.base_url  # closed when the block ends
    started = time.monotonic()
    code, out = check("--provider", "openai", "--model", "gpt-4.1", "--base-url", base_url)
    assert code == 2 and "check the base URL" in out and "call: cannot reach the API" in out
    assert time.monotonic() - started < 10  # not a minute of retries


def test_a_rejected_key_and_an_unknown_model_are_named(keys: None) -> None:
    with FakeModelServer("openai-chat") as server:
        server.answer_probes = False
        server.script(ErrorReply(401), ErrorReply(404, message="The model `gpt-4.1` does not exist"))
        code, out = check("--provider", "openai", "--model", "gpt-4.1", "--base-url", server.base_url)
        assert code == 2 and "OPENAI_API_KEY" in out and KEY not in out
        code, out = check("--provider", "openai", "--model", "gpt-4.1", "--base-url", server.base_url)
        assert code == 2 and "does not exist" in out
        assert len(server.requests) == 2  # one call each: nothing retried


def test_an_unpriced_model_needs_allow_unpriced(keys: None) -> None:
    with FakeModelServer("openai-chat") as server:
        code, out = check("--provider", "openai", "--model", "my-local-model", "--base-url", server.base_url)
        assert code == 2 and "--allow-unpriced" in out and server.probes == []  # nothing called
        code, out = check("--provider", "openai", "--model", "my-local-model", "--base-url", server.base_url, "--allow-unpriced")
        assert code == 0, out


def test_run_with_a_wrong_base_url_makes_no_session(keys: None, tmp_path: Path, tiny_tasks: Path) -> None:
    with FakeModelServer("openai-chat") as gone:
        base_url = gone.base_url
    sessions = tmp_path / "sessions"
    common = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", base_url, "--device", "cpu"]
    roots = ["--sessions-dir", str(sessions), "--tasks-dir", str(tiny_tasks)]
    result = CliRunner().invoke(app, ["run", "muon_orthogonalize", *common, *roots])
    assert result.exit_code == 2 and "no session was made" in result.output, result.output
    assert not sessions.exists() or not any(sessions.iterdir())


def test_a_tool_error_listing_problems_is_printed_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30, item 12: `design` cut an invalid design's list of problems to one line ending in "..."."""
    from workbench.cli.agent_cmds import Progress
    from workbench.session.events import ToolResult

    problems = [f"- stages.{n}.parallelism: leaves out the registered workload b{n}" for n in range(12)]
    content = "the design is not valid (12 problem(s)); fix them and submit again:\n" + "\n".join(problems)
    Progress(40)(ToolResult(turn=3, call_id="c1", ok=False, content=content))
    out = capsys.readouterr().out
    assert "turn 3: tool error: the design is not valid (12 problem(s))" in out
    assert all(problem in out for problem in problems) and "..." not in out
