"""Tolerance rules per compared value, and views of quantised outputs (a toy task in tests/fixtures).

A task's default rule covers every output; `[tolerance.outputs.NAME]` holds one output (or state input)
to its own rule, and `views` compares the task's view of the outputs (dequantised values) instead of the
raw ones, for the solution and the oracle alike."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import CatalogError
from workbench.catalog.loader import load_task
from workbench.harness.protocol.devices import expert_floor_ms, peaks_for, reference_floor_ms

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SOLUTION = FIXTURES / "group_quant_solution.py"


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    dest = tmp_path / "tasks" / "group_quant_toy"
    shutil.copytree(FIXTURES / "group_quant_toy", dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def variant(tmp_path: Path, old: str, new: str) -> Path:
    text = SOLUTION.read_text()
    assert old in text
    path = tmp_path / "solution.py"
    path.write_text(text.replace(old, new))
    return path


def test_rules_per_output_are_loaded_and_default_to_the_tasks_rule(toy: Path) -> None:
    tol = load_task(toy).spec.tolerance
    assert tol.views == "dequantized"
    assert tol.rule_for("rowsum").rtol == 1e-4 and tol.rule_for("rowsum").matrix_rel_fro is None
    assert tol.rule_for("x").matrix_rel_fro == 2e-2  # a view without a rule of its own: the default


def test_a_rule_for_a_name_that_is_neither_output_nor_state_is_refused(toy: Path, repo: Path, tmp_path: Path) -> None:
    dest = tmp_path / "rms" / "rmsnorm_bwd"
    shutil.copytree(repo / "tasks" / "rmsnorm_bwd", dest, ignore=shutil.ignore_patterns("__pycache__"))
    toml = dest / "task.toml"
    toml.write_text(toml.read_text().replace("[tolerance.outputs.dW]", "[tolerance.outputs.dw]"))
    with pytest.raises(CatalogError, match=r"tolerance.outputs names \['dw'\].*compared values: \['dW', 'dX'\]"):
        load_task(dest)


def test_both_floors_come_from_the_tasks_formulas(toy: Path) -> None:
    task = load_task(toy)
    peaks = peaks_for("NVIDIA H200")
    assert peaks is not None
    workload = task.workload("m256_n4096")
    elements = 256 * 4096
    assert expert_floor_ms(peaks, task, workload) == pytest.approx(6 * elements / 4.8e12 * 1e3)
    assert reference_floor_ms(peaks, task, workload) == pytest.approx(20 * elements / 4.8e12 * 1e3)


@pytest.mark.slow
def test_views_compare_dequantised_values_and_a_tight_rule_holds_one_output(toy: Path, tmp_path: Path) -> None:
    task = load_task(toy)
    honest = evaluate(task, SOLUTION, "cpu")
    assert honest.status == "passed", honest.message
    assert honest.workloads[0].rel_err is not None and honest.workloads[0].error_bound is not None
    # negated scales and values: the dequantised values are right, but the view refuses the scales
    negative = evaluate(task, variant(tmp_path, "SCALE_SIGN = 1.0", "SCALE_SIGN = -1.0"), "cpu")
    assert negative.status == "incorrect_numerical"
    assert "outputs are invalid: every scale must be positive and finite" in negative.message
    # the scale of each row's first group stored for every group: values dequantise wrong
    wrong_group = evaluate(task, variant(tmp_path, "SCALE_GROUP = -1", "SCALE_GROUP = 0"), "cpu")
    assert wrong_group.status == "incorrect_numerical" and "output x" in wrong_group.message
    # row sums rounded to bfloat16 are within the default 2e-2, not within rowsum's own rule
    coarse = evaluate(task, variant(tmp_path, "ROWSUM_BF16 = False", "ROWSUM_BF16 = True"), "cpu")
    assert coarse.status == "incorrect_numerical" and "output rowsum" in coarse.message


@pytest.mark.slow
def test_a_rule_naming_no_view_is_the_tasks_fault(toy: Path) -> None:
    toml = toy / "task.toml"
    toml.write_text(toml.read_text().replace("[tolerance.outputs.rowsum]", "[tolerance.outputs.row_sum]"))
    report = evaluate(load_task(toy), SOLUTION, "cpu")
    assert report.status == "task_error" and "row_sum" in report.message


def test_eval_shows_the_fraction_of_each_floor_beside_the_latencies() -> None:
    from rich.console import Console

    from workbench.cli.eval_cmd import report_table
    from workbench.harness.protocol.report import EvalReport, TimingStats, WorkloadResult

    def stats(ms: float) -> TimingStats:
        return TimingStats(mean_ms=ms, median_ms=ms, min_ms=ms, max_ms=ms, std_ms=0.0, reps=50, rel_sem=0.0, method="events")

    w = WorkloadResult(
        name="m16384_n4096", status="passed", latency=stats(0.2), reference=stats(1.0), floor_ms=0.1, reference_floor_ms=0.45
    )
    assert w.floor_fraction == pytest.approx(0.5) and w.reference_floor_fraction == pytest.approx(0.45)
    report = EvalReport(task="rmsnorm_bwd", solution="expert.py", device="cuda", status="passed", workloads=[w])
    assert report.summary_json()["workloads"][0]["floor_fraction"] == pytest.approx(0.5)  # type: ignore[index]
    console = Console(width=200, record=True)
    console.print(report_table(report))
    text = console.export_text()
    assert "of floor" in text and "50%" in text and "45%" in text and "5.00x" in text


def test_bench_tasks_needs_a_gpu_and_says_so() -> None:
    import torch
    from typer.testing import CliRunner

    from workbench.cli import app

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: bench tasks would run")
    result = CliRunner().invoke(app, ["bench", "tasks", "rmsnorm_bwd"])
    assert result.exit_code == 2 and "needs a CUDA GPU" in result.output


def test_session_lines_give_the_fraction_of_the_floor_beside_each_latency() -> None:
    from workbench.session.events import EvalFinished
    from workbench.session.format import describe
    from workbench.session.testing import timed_report

    report = timed_report("rmsnorm_bwd", {"m16384_n4096": (1.0, 2.0)})  # floor 0.5 ms
    line = describe(EvalFinished(rev=2, sha="0" * 40, report=report))
    assert line is not None and "m16384_n4096 passed 1.0000 ms (50% of floor)" in line


@pytest.mark.slow
def test_inputs_that_contradict_an_axis_carried_by_a_scalar_are_the_tasks_fault(repo: Path, tmp_path: Path) -> None:
    dest = tmp_path / "tasks" / "windowed_attention"
    shutil.copytree(repo / "tasks" / "windowed_attention", dest, ignore=shutil.ignore_patterns("__pycache__"))
    inputs = dest / "inputs.py"
    assert '"window": W,' in inputs.read_text()
    inputs.write_text(inputs.read_text().replace('"window": W,', '"window": W + 1,'))
    task = load_task(dest)
    report = evaluate(task, task.file("expert.py"), "cpu", [task.spec.smoke_workloads[0].name])
    assert report.status == "task_error" and "carries the workload's axis W" in report.message


def test_bench_reports_flops_where_compute_binds_the_floor_and_bytes_elsewhere() -> None:
    from workbench.catalog import Catalog
    from workbench.cli.bench_cmd import _rate
    from workbench.harness.protocol.report import TimingStats, WorkloadResult

    catalog = Catalog(Path(__file__).resolve().parent.parent / "tasks", Path(__file__).resolve().parent.parent / "guidance")
    task = catalog.task("fp8_block_gemm")
    peaks = peaks_for("NVIDIA H200")

    def result(name: str, ms: float) -> WorkloadResult:
        stats = TimingStats(mean_ms=ms, median_ms=ms, min_ms=ms, max_ms=ms, std_ms=0.0, reps=20, rel_sem=0.0, method="events")
        return WorkloadResult(name=name, status="passed", latency=stats)

    assert _rate(task, result("m4096_n7168_k16384", 1.0), peaks) == "962 TFLOP/s"  # 2 M N K / 1 ms
    assert _rate(task, result("m128_n7168_k2048", 0.0132), peaks).endswith("TB/s")  # the weights' bytes bind
    assert _rate(task, result("m4096_n7168_k16384", 1.0), None).endswith("TB/s")  # unknown device: bytes


@pytest.mark.slow
def test_any_failure_of_the_views_on_the_solutions_outputs_is_charged_to_the_solution(toy: Path, tmp_path: Path) -> None:
    """Fail-closed: a view that chokes on odd outputs (here with a RuntimeError, not the ValueError the
    task meant) must not turn the solution's failure into the task's (task_error, exit 2)."""
    ref = toy / "reference.py"
    text = ref.read_text()
    assert 'raise ValueError("every scale must be positive and finite")' in text
    ref.write_text(text.replace('raise ValueError("every scale', 'raise RuntimeError("every scale'))
    report = evaluate(load_task(toy), variant(tmp_path, "SCALE_SIGN = 1.0", "SCALE_SIGN = -1.0"), "cpu")
    assert report.status == "incorrect_numerical"
    assert "outputs are invalid: RuntimeError: every scale must be positive" in report.message
