"""What a command driver's command names, seen from inside its sandbox (issue 30, item 4): an agent under
/tmp ran into "No such file or directory" and exit code 127 with nothing said when the session was made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.session.command_paths import command_paths

REPO = Path(__file__).resolve().parent.parent


def test_a_script_in_its_own_folder_exposes_that_folder(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "run.sh").write_text("#!/bin/sh\n")
    found = command_paths(f"bash {agent / 'run.sh'} --fast", hidden=[], home=Path("/nonexistent-home"))
    assert found.exposed == [agent.resolve()] and found.problems == []


def test_a_file_right_under_tmp_or_home_exposes_the_file_alone(tmp_path: Path) -> None:
    script = tmp_path / "x.sh"
    script.write_text("echo\n")
    found = command_paths(f"sh {script}", hidden=[], home=tmp_path)  # its folder holds the home directory
    assert found.exposed == [script.resolve()]


def test_an_option_value_is_a_path_too(tmp_path: Path) -> None:
    config = tmp_path / "conf" / "agent.toml"
    config.parent.mkdir()
    config.write_text("")
    found = command_paths(f"my-agent --config={config}", hidden=[], home=Path("/nonexistent-home"))
    assert found.exposed == [config.parent.resolve()]


def test_a_path_in_a_hidden_folder_is_a_problem_not_exposed(tmp_path: Path) -> None:
    hidden = tmp_path / "repo"
    (hidden / "scripts").mkdir(parents=True)
    (hidden / "scripts" / "agent.py").write_text("")
    found = command_paths(f"python {hidden / 'scripts' / 'agent.py'}", hidden=[hidden], home=Path("/nonexistent-home"))
    assert found.exposed == []
    assert len(found.problems) == 1 and "hides" in found.problems[0] and "--unsandboxed" in found.problems[0]


def test_a_relative_script_that_exists_only_where_the_user_is_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("")
    found = command_paths("python agent.py", hidden=[], home=Path("/nonexistent-home"), cwd=tmp_path)
    assert len(found.problems) == 1 and "absolute path" in found.problems[0]
    # a file the workspace will hold, and words that are not paths, are fine
    (tmp_path / "solution.py").write_text("")
    ok = command_paths(
        "python solution.py -m x http://a/b",
        hidden=[],
        home=Path("/nonexistent-home"),
        cwd=tmp_path,
        workspace_names=["solution.py"],
    )
    assert ok.problems == [] and ok.exposed == []


def test_system_paths_and_missing_paths_are_left_alone() -> None:
    found = command_paths("/usr/bin/env python3 /no/such/file 'unbalanced", hidden=[], home=Path("/nonexistent-home"))
    assert found == command_paths("", hidden=[], home=Path("/nonexistent-home"))


# -- end to end ---------------------------------------------------------------------------------------------
def _cli(env: dict[str, str], *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], env=env, capture_output=True, text=True, timeout=240, cwd=cwd
    )


@pytest.mark.slow
def test_a_command_agent_under_tmp_runs_in_its_sandbox(tmp_path: Path, tiny_tasks: Path) -> None:
    from workbench.harness.host import sandbox

    if sandbox.status("cpu").kind != "bubblewrap":
        pytest.skip("bubblewrap cannot start here: the command would run unsandboxed, where /tmp is the host's")
    env = {
        **os.environ,
        "D2K_SESSIONS_DIR": str(tmp_path / "sessions"),
        "D2K_TASKS_DIR": str(tiny_tasks),
        "PYTHONPATH": str(REPO),
    }
    agent = tmp_path / "my-agent"
    agent.mkdir()
    (agent / "helper.txt").write_text("from a neighbour\n")
    (agent / "run.sh").write_text('#!/bin/sh\necho "agent ran"\ncat "$(dirname "$0")/helper.txt"\n')
    (agent / "run.sh").chmod(0o755)
    made = _cli(
        env,
        "session",
        "new",
        "muon_orthogonalize",
        "--device",
        "cpu",
        "--json",
        "--driver",
        "command",
        "--command",
        str(agent / "run.sh"),
    )
    assert made.returncode == 0, made.stderr
    session = json.loads(made.stdout)
    ran = _cli(env, "session", "run", session["id"])
    assert "agent ran" in ran.stdout + ran.stderr and "from a neighbour" in ran.stdout + ran.stderr, ran.stdout + ran.stderr
    # a command naming a file relative to where the user typed it is refused at once, with the fix
    refused = _cli(
        env,
        "session",
        "new",
        "muon_orthogonalize",
        "--device",
        "cpu",
        "--driver",
        "command",
        "--command",
        "sh my-agent/run.sh",
        cwd=tmp_path,
    )
    assert refused.returncode == 2 and "absolute path" in refused.stderr, refused.stderr


def test_a_link_into_a_hidden_folder_is_a_problem_not_a_way_in(tmp_path: Path) -> None:
    """An agent's command naming a symlink to the tasks (or the guidance) must not expose what it points to."""
    hidden = tmp_path / "guidance"
    hidden.mkdir()
    (hidden / "rubric.toml").write_text("secret")
    link = tmp_path / "innocent"
    link.symlink_to(hidden)
    found = command_paths(f"cat {link}/rubric.toml", hidden=[hidden], home=Path("/nonexistent-home"))
    assert found.exposed == [] and len(found.problems) == 1 and "hides" in found.problems[0]
