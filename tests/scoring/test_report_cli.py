"""`report` as a user runs it: every format, figures, filters, the baseline sessions, and exit code 2 for
bad input. The command is registered on a small app here (the real app registers it the same way)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from workbench import paths
from workbench.cli.report_cmd import report
from workbench.scoring.testing import Step, scored_session, timed

from .conftest import MUON, W1

EXAMPLES = paths.REPO_ROOT / "sessions" / "examples"
app = typer.Typer()
app.command("report")(report)


@app.command("other")
def _other() -> None:  # a second command, so that `report` is a subcommand as in the real app
    """Nothing."""


runner = CliRunner()


def run(*args: str | Path, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["report", *map(str, args)], env=env)


@pytest.mark.parametrize("fmt", ["table", "md", "csv", "json"])
def test_every_format_over_the_examples(fmt: str) -> None:
    result = run(EXAMPLES, "--format", fmt)
    assert result.exit_code == 0, result.output
    out = result.stdout
    if fmt == "table":
        assert "Table 1: correctness and Performance Score" in out and "Table 6: tokens and cost" in out
        assert "device: NVIDIA H200" in out and "note:" in out
    elif fmt == "md":
        assert "### Table 5: fast_p" in out and "| replay of 20261130-053407-muon_orthogonalize-eab7 |" in out
    elif fmt == "csv":
        assert out.startswith("# sessions:") and "# table1: Table 1" in out
    else:
        data = json.loads(out)
        shipped = sorted(d.name for d in EXAMPLES.iterdir() if (d / "session.toml").is_file())
        assert sorted(data["provenance"]["sessions"]) == shipped


def test_one_table_as_csv_and_the_default_roots(tmp_path: Path) -> None:
    env = {"D2K_SESSIONS_DIR": str(tmp_path / "none-here"), "D2K_EXAMPLES_DIR": str(EXAMPLES)}
    alone = run("--format", "csv", "--table", "table5", env=env)  # no paths: the user's sessions only, and none here
    assert alone.exit_code == 2 and "--examples" in alone.stderr  # the shipped examples are never mixed in unasked
    result = run("--format", "csv", "--table", "table5", "--examples", env=env)
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["model", "fast_1 none", "fast_1.5 none", "fast_2 none"] and rows[-1][0] == "all pairs"
    by_id = run("50b5", "--format", "json", "--table", "table1", env=env)  # a session id
    assert by_id.exit_code == 0, by_id.output
    assert list(json.loads(by_id.stdout)["tables"]) == ["table1"]


def test_figures(tmp_path: Path) -> None:
    """A figures folder that does not exist yet, nor its parent, is made and gets both figures."""
    result = run(EXAMPLES, "--format", "md", "--figures", tmp_path / "new" / "figs")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "new" / "figs").iterdir()) == ["figure3_ablation.png", "figure4_sperf_turns.png"]
    assert "wrote" in result.stderr and "wrote" not in result.stdout


def test_filters_and_baseline_sessions(bench_root: Path, baseline_root: Path) -> None:
    result = run(bench_root, "--format", "json", "--model", "model-a", "--guidance", "none", "--task", MUON)
    assert result.exit_code == 0, result.output
    (score,) = json.loads(result.stdout)["results"]["scores"]
    assert score["sperf"] == pytest.approx(4.0)
    base = run(bench_root, "--format", "json", "--task", MUON, "--baseline-sessions", baseline_root, "--baseline-pick", "final")
    assert base.exit_code == 0, base.output
    data = json.loads(base.stdout)
    assert data["provenance"]["baseline_sessions"] == ["base-muon"]
    cell = next(c for c in data["results"]["cells"] if c["group"] == "model-a" and c["config"] == "none")
    assert cell["speedup"] == pytest.approx(2.0)


def test_bad_input_exits_2(tmp_path: Path, bench_root: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    scored_session(tmp_path / "b200", MUON, [Step(1, timed(MUON, {W1: (1, 2)}, device_name="NVIDIA B200"))], model="m")
    cases = [
        ((EXAMPLES, "--format", "xml"), "unknown format 'xml'; expected one of: table, md, csv, json"),
        ((tmp_path / "empty",), "holds no sessions"),
        ((tmp_path / "file",), "not a session or a folder of sessions"),
        ((tmp_path / "no" / "such",), "no such session or folder of sessions"),
        ((bench_root, tmp_path / "b200"), "different device models"),
        ((EXAMPLES, "--table", "table3"), "unknown table table3"),
        ((EXAMPLES, "--baseline-sessions", EXAMPLES), "several baseline sessions for task muon_orthogonalize"),
        ((EXAMPLES, "--baseline-sessions", "eab7"), "has no latencies"),  # the CPU example as the baseline
        ((EXAMPLES, "--figures", tmp_path / "file"), "not a folder"),
    ]
    for args, message in cases:
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.stderr.split()), (args, result.stderr)
        assert "Traceback" not in result.output
    empty_env = {"D2K_SESSIONS_DIR": str(tmp_path / "empty"), "D2K_EXAMPLES_DIR": str(tmp_path / "empty")}
    nothing = run(env=empty_env)
    assert nothing.exit_code == 2 and "no sessions found" in nothing.stderr


def test_the_shipped_examples_stay_out_of_a_users_own_sessions(tmp_path: Path, bench_root: Path) -> None:
    # the user's sessions root holds their sessions; the shipped examples (an H200 and a CPU session) are
    # counted only with --examples, or when named themselves
    env = {"D2K_SESSIONS_DIR": str(bench_root), "D2K_EXAMPLES_DIR": str(EXAMPLES)}
    own = run("--format", "json", "--table", "table1", env=env)
    assert own.exit_code == 0, own.output
    sessions = json.loads(own.stdout)["provenance"]["sessions"]
    shipped = {d.name for d in EXAMPLES.iterdir() if (d / "session.toml").is_file()}
    assert sessions and not shipped & set(sessions)
    both = run("--format", "json", "--table", "table1", "--examples", env=env)
    assert shipped <= set(json.loads(both.stdout)["provenance"]["sessions"])
