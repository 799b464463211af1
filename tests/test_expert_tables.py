"""`d2k-workbench bench tables`: docs/performance.md's expert tables and README.md's task list are generated from
the runs committed under docs/results/ and from the catalogue, and the committed documents match them."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app
from workbench.harness.protocol.report import EvalReport, TimingStats, WorkloadResult
from workbench.scoring.expert_tables import begin_marker, end_marker

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_the_committed_tables_are_what_the_data_and_the_catalogue_give() -> None:
    result = runner.invoke(app, ["bench", "tables", "--check"])
    assert result.exit_code == 0, result.output


def _timing(ms: float) -> TimingStats:
    return TimingStats(mean_ms=ms, median_ms=ms, min_ms=ms, max_ms=ms, std_ms=0.0, reps=10, rel_sem=0.001, method="events")


def _run(repo: Path, gpu: str, date: str, latency_ms: float, phases: dict[str, float] | None = None) -> None:
    folder = repo / "docs" / "results" / gpu / date
    folder.mkdir(parents=True)
    (folder / "run.toml").write_text(f'date = "{date}"\ncommand = "d2k-workbench bench tasks rmsnorm_bwd --reports DIR"\n')
    workload = WorkloadResult(
        name="m16384_n4096",
        status="passed",
        latency=_timing(latency_ms),
        reference=_timing(2.0),
        floor_ms=0.05,
        phases=phases or {},
        checker_peak_mib=2048.0,
        solution_peak_mib=512.0,
    )
    report = EvalReport(
        task="rmsnorm_bwd",
        solution="expert.py",
        device="cuda",
        status="passed",
        workloads=[workload],
        device_name="NVIDIA H100 80GB HBM3",
        versions={"torch": "2.11.0", "triton": "3.6.0"},
        duration_s=9.4,
        start_s=1.0,
    )
    (folder / "rmsnorm_bwd.json").write_text(report.model_dump_json(indent=2))


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "README.md").write_text(f"# x\n\n{begin_marker('tasks')}\nstale\n{end_marker('tasks')}\n\nafter\n")
    experts = f"{begin_marker('experts')}\n{end_marker('experts')}"
    evaluation = f"{begin_marker('evaluation')}\n{end_marker('evaluation')}"
    (repo / "docs" / "performance.md").write_text(f"# p\n\n{experts}\nmid\n{evaluation}\nkept\n")
    return repo


def test_a_committed_run_becomes_rows_and_the_check_fails_until_they_are_written(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _run(repo, "h100", "2026-12-07", latency_ms=0.2)
    _run(repo, "h100", "2026-12-08", latency_ms=0.1)  # the newer run of the task is the one shown
    check = runner.invoke(app, ["bench", "tables", "--check", "--repo", str(repo)])
    assert check.exit_code == 1
    assert "README.md" in check.output and "performance.md" in check.output
    assert runner.invoke(app, ["bench", "tables", "--write", "--repo", str(repo)]).exit_code == 0
    assert runner.invoke(app, ["bench", "tables", "--check", "--repo", str(repo)]).exit_code == 0
    performance = (repo / "docs" / "performance.md").read_text()
    row = "| rmsnorm_bwd | m16384_n4096 | passed | 0.1000 | 20.00x | - | 50% | 2026-12-08 | 9 |"
    assert row in performance and "0.2000" not in performance
    assert "NVIDIA H100 80GB HBM3 (`docs/results/h100/`)" in performance and performance.endswith("kept\n")
    assert "torch 2.11.0, triton 3.6.0" in performance
    assert "Not measured on this GPU:" in performance and "`muon_orthogonalize`" in performance
    readme = (repo / "README.md").read_text()
    assert "stale" not in readme and "| `fused_linear_jsd` |" in readme and readme.endswith("after\n")


def test_the_readme_lists_every_task_of_the_catalogue() -> None:
    readme = (REPO / "README.md").read_text()
    listed = readme.split(begin_marker("tasks"))[1].split(end_marker("tasks"))[0]
    task_ids = sorted(p.name for p in (REPO / "tasks").iterdir() if (p / "task.toml").is_file())
    assert f"{len(task_ids)} tasks" in listed
    assert all(f"| `{task_id}` |" in listed for task_id in task_ids)


def test_a_document_without_its_markers_is_a_one_line_usage_error(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "docs" / "performance.md").write_text("# p\n")
    result = runner.invoke(app, ["bench", "tables", "--check", "--repo", str(repo)])
    assert result.exit_code == 2
    assert "performance.md" in result.output and "BEGIN experts" in result.output


def test_a_report_that_is_not_one_is_a_one_line_usage_error(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _run(repo, "h200", "2026-12-08", latency_ms=0.1)
    (repo / "docs" / "results" / "h200" / "2026-12-08" / "broken.json").write_text('{"task": "x"}')
    result = runner.invoke(app, ["bench", "tables", "--check", "--repo", str(repo)])
    assert result.exit_code == 2
    assert "broken.json" in result.output and len(result.output.strip().splitlines()) == 1


def test_each_run_of_a_task_is_a_row_of_its_evaluation_time_oldest_first(tmp_path: Path) -> None:
    """The before and after of a harness change, one above the other: wall time, phases, peaks, speedups."""
    repo = _repo(tmp_path)
    _run(repo, "h100", "2026-12-07", latency_ms=0.2, phases={"first_call": 2.0, "correctness": 1.5, "reference_timing": 4.0})
    _run(
        repo,
        "h100",
        "2026-12-08",
        latency_ms=0.1,
        phases={"first_call": 2.0, "correctness": 1.5, "reference_timing": 1.0, "library_timing": 2.5},
    )
    assert runner.invoke(app, ["bench", "tables", "--write", "--repo", str(repo)]).exit_code == 0
    evaluation = (repo / "docs" / "performance.md").read_text().split(begin_marker("evaluation"))[1]
    assert "| reference timing | library timing | re-check |" in evaluation
    before = "| rmsnorm_bwd | 2026-12-07 | 9.4 | 1.0 | 2.0 | 1.5 | 0.0 | 4.0 | 0.0 | 0.0 | 0.9 | 2.0 | 0.5 | 10.00x | - |"
    after = "|  | 2026-12-08 | 9.4 | 1.0 | 2.0 | 1.5 | 0.0 | 1.0 | 2.5 | 0.0 | 1.4 | 2.0 | 0.5 | 20.00x | - |"
    assert before in evaluation and after in evaluation
    assert evaluation.index(before) < evaluation.index(after)
