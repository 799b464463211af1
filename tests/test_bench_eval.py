"""`d2k-workbench bench eval`: where an evaluation's time goes (the figures of docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.harness.host import sandbox

REPO = Path(__file__).resolve().parent.parent
NAIVE = REPO / "tests" / "solutions" / "muon_naive.py"
runner = CliRunner()


def test_an_unknown_task_is_a_usage_error() -> None:
    result = runner.invoke(app, ["bench", "eval", "no_such_task", "--device", "cpu"])
    assert result.exit_code == 2
    assert "no_such_task" in result.output


def test_a_missing_solution_file_is_a_usage_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.py")
    result = runner.invoke(app, ["bench", "eval", "muon_orthogonalize", "--solution", missing, "--device", "cpu"])
    assert result.exit_code == 2
    assert "solution file not found" in result.output


@pytest.mark.slow
def test_two_revisions_report_their_phases_and_what_they_were_spent_on(tiny_tasks: Path) -> None:
    # the small Muon task (one smoke workload): the phases are what is checked, not the matrices' size
    arguments = ["--solution", str(NAIVE), "--device", "cpu", "--revisions", "2", "--json", "--tasks-dir", str(tiny_tasks)]
    result = runner.invoke(app, ["bench", "eval", "muon_orthogonalize", *arguments])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["revision"] for r in rows] == [1, 2] and all(r["status"] == "passed" for r in rows)
    for row in rows:
        assert {"start", "first_call", "correctness", "other"} <= set(row["phases_s"])
        spent = row["activities_s"]
        assert spent["call"] > 0 and spent["oracle"] > 0  # the solution's calls and the checker's oracle
        assert sum(row["phases_s"].values()) <= row["wall_s"] + 0.05
    if sandbox.status("cpu").kind == "bubblewrap":  # every revision's solution process from the warm zygote
        assert [r["start"] for r in rows] == ["warm", "warm"]


@pytest.mark.slow
def test_cold_starts_every_process_from_a_fresh_interpreter(tiny_tasks: Path) -> None:
    arguments = ["--solution", str(NAIVE), "--device", "cpu", "--json", "--cold", "--tasks-dir", str(tiny_tasks)]
    result = runner.invoke(app, ["bench", "eval", "muon_orthogonalize", *arguments])
    assert result.exit_code == 0, result.output
    assert [r["start"] for r in json.loads(result.stdout)] == ["plain"]
