"""`run` and `design` without --max-turns give the session the default budget (the CLI no longer imports the
session package to name it, so that the workbench starts without it: issue 58, item 11)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from workbench.agent.testing import ScriptedProvider
from workbench.cli import app
from workbench.cli.common import CliServices
from workbench.llm import ProviderError
from workbench.session.config import DEFAULT_MAX_TURNS, load_config


def test_design_without_max_turns_gets_the_default_budget(tmp_path: Path, tiny_tasks: Path) -> None:
    model = ScriptedProvider([], then=ProviderError("scripted model: refused for good", retryable=False, status=401))
    services = CliServices(provider_factory=lambda provider, name, base_url: model)
    env = {"D2K_SESSIONS_DIR": str(tmp_path / "sessions"), "D2K_TASKS_DIR": str(tiny_tasks)}
    args = ["design", "muon_orthogonalize", "--provider", "openai", "--model", "scripted", "--allow-unpriced"]
    result = CliRunner().invoke(app, args, env=env, obj=services)
    assert result.exit_code == 2, result.output  # the model failed for good at its first call
    (session,) = (tmp_path / "sessions").iterdir()
    agent = load_config(session).agent
    assert agent is not None and agent.max_turns == DEFAULT_MAX_TURNS


def test_the_help_names_the_default_budget() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert f"default {DEFAULT_MAX_TURNS}," in " ".join(result.stdout.split())
