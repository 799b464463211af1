"""`run`, `design` and `session new --driver agent` from the command line, with a scripted model in-process
(the real runner and, where a revision lands, the real harness on a small CPU task)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.agent.testing import ScriptedProvider, call, turn
from workbench.cli import app
from workbench.cli.common import CliServices
from workbench.llm import ProviderError
from workbench.session.config import load_config
from workbench.session.eventlog import read_log
from workbench.session.events import Error, SessionFinished

from .test_design import valid_design

KEY = "sk-test-abcdefghijklmnopqrstuvwxyz123456"


@pytest.fixture
def scripted() -> Iterator[list[ScriptedProvider]]:
    """Agent sessions run by `invoke` get the provider that the test appends (the last one)."""
    made: list[ScriptedProvider] = []
    SCRIPTED.append(made)
    yield made
    SCRIPTED.remove(made)


SCRIPTED: list[list[ScriptedProvider]] = []  # the running test's providers, if it asked for the fixture


def invoke(tmp_path: Path, tasks: Path, *args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    env = {"D2K_SESSIONS_DIR": str(tmp_path / "sessions"), "D2K_TASKS_DIR": str(tasks), "OPENAI_API_KEY": KEY}
    services = CliServices(provider_factory=lambda provider, model, base_url: SCRIPTED[-1][-1]) if SCRIPTED else CliServices()
    result = runner.invoke(app, list(args), env=env, catch_exceptions=False, obj=services)
    return result.exit_code, result.stdout, result.stderr


def only_session(tmp_path: Path) -> Path:
    (folder,) = [p for p in (tmp_path / "sessions").iterdir() if not p.name.startswith(".")]
    return folder


@pytest.mark.slow  # the template's CPU evaluation
def test_run_exits_2_with_one_line_when_the_provider_fails_for_good(
    tmp_path: Path, tiny_tasks: Path, scripted: list[ScriptedProvider]
) -> None:
    failure = ProviderError(
        f"openai model gpt-x: authentication failed (HTTP 401): key {KEY} refused",  # as if an adapter leaked it
        retryable=False,
        status=401,
    )
    scripted.append(ScriptedProvider([], then=failure))
    code, out, err = invoke(tmp_path, tiny_tasks, "run", "muon_orthogonalize", "--provider", "openai", "--model", "gpt-4.1")
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "authentication failed (HTTP 401)" in lines[0]
    assert KEY not in err + out and "[redacted OPENAI_API_KEY]" in lines[0]
    assert out.startswith("session ") and "0 turn(s)" in out
    folder = only_session(tmp_path)
    events = read_log(folder / "events.jsonl").events
    assert any(isinstance(e, Error) and e.where == "agent" for e in events)
    assert isinstance(events[-1], SessionFinished)
    for path in folder.rglob("*"):  # the key is nowhere in the session
        if path.is_file() and ".git" not in path.parts:
            assert KEY not in path.read_text(errors="replace"), path
    config = load_config(folder)
    assert config.agent is not None
    assert (config.driver, config.agent.provider, config.agent.model, config.agent.mode) == ("agent", "openai", "gpt-4.1", "code")


def test_run_refuses_bad_usage_before_making_a_session(
    tmp_path: Path, tiny_tasks: Path, scripted: list[ScriptedProvider]
) -> None:
    scripted.append(ScriptedProvider([]))
    code, _, err = invoke(tmp_path, tiny_tasks, "run", "muon_orthogonalize", "--provider", "openai", "--model", "my-local-model")
    assert code == 2 and "no price for model 'my-local-model'" in err and "--allow-unpriced" in err
    code, _, err = invoke(tmp_path, tiny_tasks, "run", "muon_orthogonalize", "--provider", "gemini", "--model", "gpt-4.1")
    assert code == 2 and "openai, openai-responses, anthropic" in err
    code, _, err = invoke(
        tmp_path,
        tiny_tasks,
        "run",
        "muon_orthogonalize",
        "--provider",
        "openai",
        "--model",
        "m",
        "--allow-unpriced",
        "--max-usd",
        "1",
    )
    assert code == 2 and "--max-usd needs a priced model" in err
    code, _, err = invoke(tmp_path, tiny_tasks, "run", "muon_orthogonalize", "--provider", "openai")
    assert code == 2 and "--model" in err
    assert not (tmp_path / "sessions").exists() or not [
        p for p in (tmp_path / "sessions").iterdir() if not p.name.startswith(".")
    ]


def test_design_command_saves_a_valid_design_and_exits_0(
    tmp_path: Path, tiny_tasks: Path, scripted: list[ScriptedProvider]
) -> None:
    scripted.append(
        ScriptedProvider([turn(call("read_file", path="task/task.toml")), turn(call("submit_design", design=valid_design()))])
    )
    code, out, err = invoke(
        tmp_path, tiny_tasks, "design", "muon_orthogonalize", "--provider", "anthropic", "--model", "scripted", "--allow-unpriced"
    )
    assert code == 0, err
    assert "turn 1/350  read_file" in out and "turn 2/350  submit_design" in out
    folder = only_session(tmp_path)
    assert f"design: {folder / 'workspace' / 'model_design.json'}" in out
    assert json.loads((folder / "workspace" / "model_design.json").read_text())["l1"][0]["id"] == "L1.square_side"
    assert load_config(folder).design_mode


def test_session_new_makes_an_agent_session_that_session_run_runs(
    tmp_path: Path, tiny_tasks: Path, scripted: list[ScriptedProvider]
) -> None:
    common = ("session", "new", "muon_orthogonalize", "--driver", "agent", "--json")
    code, _, err = invoke(tmp_path, tiny_tasks, *common, "--provider", "openai")
    assert code == 2 and "--model" in err
    code, _, err = invoke(tmp_path, tiny_tasks, "session", "new", "muon_orthogonalize", "--driver", "human", "--model", "x")
    assert code == 2 and "--model is only for the agent driver" in err
    code, out, err = invoke(
        tmp_path,
        tiny_tasks,
        *common,
        "--provider",
        "openai-responses",
        "--model",
        "scripted",
        "--allow-unpriced",
        "--max-turns",
        "3",
        "--agent-mode",
        "design",
        "--device",
        "cpu",
    )
    assert code == 0, err
    session = json.loads(out)
    config = load_config(Path(session["dir"]))
    assert config.agent is not None
    agent = config.agent
    assert (agent.provider, agent.model, agent.max_turns, agent.allow_unpriced) == ("openai-responses", "scripted", 3, True)
    scripted.append(ScriptedProvider([], then=turn(text="thinking")))  # never submits: 3 turns, exit 1
    code, out, err = invoke(tmp_path, tiny_tasks, "session", "run", session["id"])
    assert code == 1, err
    assert "the turn budget is used up (3 of 3 model calls)" in out
