"""The scripts of scripts/ as a newcomer meets them: `--help` prints a usage line and does nothing else (the wheel
fetcher downloaded, the red-team runner started pytest, the cheats runner took `--help` for a task), and a bad
argument is one line on stderr with exit code 2 before any work starts."""

from __future__ import annotations

import runpy
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
SHELL_SCRIPTS = sorted(p.name for p in (REPO / "scripts").glob("*.sh"))


def bash(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    # PATH without python3 or pip: a script that ignored its arguments and went on to work would fail loudly
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    return subprocess.run(
        ["bash", str(REPO / "scripts" / script), *args], capture_output=True, text=True, env=env, timeout=30, check=False
    )


@pytest.mark.parametrize("script", SHELL_SCRIPTS)
def test_a_shell_script_answers_help_with_its_usage_only(script: str) -> None:
    result = bash(script, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: bash scripts/{script}") and result.stderr == ""


@pytest.mark.parametrize(("script", "arg"), [("fetch_device_wheels.sh", "now"), ("gpu_redteam.sh", "many")])
def test_a_shell_script_refuses_a_bad_argument_in_one_line(script: str, arg: str) -> None:
    result = bash(script, arg)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error:"), result.stderr


def _main_answering_help(script: str, capsys: pytest.CaptureFixture[str]) -> Callable[[list[str]], int]:
    """The script's `main`, once it has printed its usage for `--help` and exited 0."""
    main: Callable[[list[str]], int] = runpy.run_path(str(REPO / "scripts" / script))["main"]
    with pytest.raises(SystemExit) as helped:
        main(["--help"])
    assert helped.value.code == 0 and capsys.readouterr().out.startswith("usage: ")
    return main


def test_the_cheats_runner_answers_help_and_refuses_an_unknown_task_before_any_evaluation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main = _main_answering_help("gpu_task_cheats.py", capsys)
    assert main(["muon_orthogonalize", "no_such_task"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:") and "no_such_task" in err


def test_the_muon_oracle_measurement_answers_help_and_refuses_bad_input_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main = _main_answering_help("muon_oracle_precision.py", capsys)
    with pytest.raises(SystemExit) as refused:
        main(["--seeds", "0"])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and "--seeds must be at least 1" in err
    if not torch.cuda.is_available():  # without a GPU: one line, exit 2, nothing measured
        assert main([]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "needs a CUDA GPU" in err
