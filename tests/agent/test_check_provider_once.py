"""`check-provider` says a failure once (issue 58, item 8): it printed the failed step, then the same failure
again as its error line with the prefix doubled ("error: openai model fake-coder: call: openai model
fake-coder: cannot reach the API ..."). Against a closed port on 127.0.0.1, through each API's SDK."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm.fake_servers import FakeModelServer
from typer.testing import CliRunner

from workbench.cli import app

KEY = "sk-test-never-in-a-file-0123456789abcdef"
APIS = {"openai": "openai-chat", "openai-responses": "openai-responses", "anthropic": "anthropic"}


@pytest.fixture
def closed_port() -> str:
    with FakeModelServer("openai-chat") as gone:
        return gone.base_url  # nothing listens there once the block ends


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


@pytest.mark.parametrize("provider", sorted(APIS))
def test_a_failed_call_is_said_once_without_a_doubled_prefix(provider: str, closed_port: str) -> None:
    args = ["check-provider", "--provider", provider, "--model", "fake-coder", "--base-url", closed_port, "--allow-unpriced"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    prefix = f"{provider} model fake-coder: "
    (error,) = result.stderr.strip().splitlines()  # one line
    assert error.startswith(f"error: {prefix}call: cannot reach the API"), error
    assert "check the base URL" in error
    assert result.output.count("cannot reach the API") == 1  # said once, on stdout and stderr together
    assert result.output.count(prefix) == 1
    assert result.stdout.splitlines() == [  # the steps that passed before it
        "ok   price: none (allowed: its spend is not counted)",
        f"ok   client: {provider} at {closed_port}",
    ]


def test_run_names_the_failed_check_once(closed_port: str, tmp_path: Path, tiny_tasks: Path) -> None:
    common = ["--provider", "openai", "--model", "fake-coder", "--base-url", closed_port, "--allow-unpriced", "--device", "cpu"]
    roots = ["--sessions-dir", str(tmp_path / "sessions"), "--tasks-dir", str(tiny_tasks)]
    result = CliRunner().invoke(app, ["run", "muon_orthogonalize", *common, *roots])
    assert result.exit_code == 2, result.output
    assert "error: openai model fake-coder: call: cannot reach the API" in result.stderr
    assert result.output.count("openai model fake-coder: ") == 1
