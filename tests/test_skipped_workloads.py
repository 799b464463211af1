"""A workload that cannot fit the device is refused up front as `skipped` (issue 55): task.toml declares
`device_memory_gib`, and `evaluate` compares it with the device's memory (faked here with device_memory_bytes)
before it starts anything. Skipped is neither a failure nor a fault: the report, `eval`'s exit code, the
session's status colour and regrade all say so."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from pooled_evaluate import evaluate
from typer.testing import CliRunner

from workbench.catalog import Catalog
from workbench.catalog.errors import CatalogError
from workbench.cli import app
from workbench.harness.host import evaluate as harness
from workbench.harness.protocol.report import EvalReport, Violation, WorkloadResult, overall_status
from workbench.session.format import status_style
from workbench.session.regrade import RegradeResult
from workbench.session.testing import timed_report

REPO = Path(__file__).resolve().parent.parent
NAIVE = REPO / "tests" / "solutions" / "muon_naive.py"
GIB = 2**30
SMALL, BIG = "smoke_small", "smoke_big"  # BIG declares 4 GiB


@pytest.fixture(scope="module")
def tasks_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the Muon task with two tiny smoke workloads, the second declaring 4 GiB of device memory."""
    root = tmp_path_factory.mktemp("memory") / "tasks"
    source = REPO / "tasks" / "muon_orthogonalize"
    shutil.copytree(source, root / "muon_orthogonalize", ignore=shutil.ignore_patterns("__pycache__"))
    toml = root / "muon_orthogonalize" / "task.toml"
    text = toml.read_text()
    cut = text.index("[[smoke_workloads]]")
    toml.write_text(
        text[:cut]
        + f'[[smoke_workloads]]\nname = "{SMALL}"\naxes = {{ B = 2, M = 64, N = 192 }}\n\n'
        + f'[[smoke_workloads]]\nname = "{BIG}"\naxes = {{ B = 2, M = 64, N = 192 }}\ndevice_memory_gib = 4\n'
    )
    return root


def _task(root: Path):  # type: ignore[no-untyped-def]
    return Catalog(root, REPO / "guidance").task("muon_orthogonalize")


class Started(Exception):
    """Raised by a checker start that must not happen."""


def _no_start(*args: Any, **kwargs: Any) -> Any:
    raise Started("a checker process was started")


def test_the_declared_need_is_read_and_must_be_positive(tasks_root: Path, tmp_path: Path) -> None:
    task = _task(tasks_root)
    assert task.workload(BIG).device_memory_gib == 4 and task.workload(SMALL).device_memory_gib is None
    bad = tmp_path / "tasks"
    shutil.copytree(tasks_root, bad)
    toml = bad / "muon_orthogonalize" / "task.toml"
    toml.write_text(toml.read_text().replace("device_memory_gib = 4", "device_memory_gib = 0"))
    with pytest.raises(CatalogError, match=r"smoke_workloads\[1\]\.device_memory_gib: Input should be greater than 0"):
        _task(bad)


def test_a_workload_needing_more_than_the_device_has_is_skipped_and_nothing_starts(
    tasks_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "_start_checker", _no_start)
    judged: list[WorkloadResult] = []
    report = harness.evaluate(_task(tasks_root), NAIVE, "cpu", [BIG], device_memory_bytes=2 * GIB, on_workload=judged.append)
    assert report.status == "skipped"
    [w] = report.workloads
    assert (w.name, w.status) == (BIG, "skipped")
    assert w.message == "needs 4 GiB of device memory, this GPU has 2.0 GiB"
    assert report.message == f"{BIG}: {w.message}" and report.sandbox.startswith("not started")
    assert report.harness_version.startswith("h-")
    assert [r.name for r in judged] == [BIG]  # announced as judged, as an evaluated workload is


@pytest.mark.slow  # a whole CPU evaluation (sandbox, solution process): 4-8 s
def test_enough_memory_evaluates_the_workload_normally(tasks_root: Path) -> None:
    report = evaluate(_task(tasks_root), NAIVE, "cpu", [BIG], device_memory_bytes=8 * GIB)
    assert report.status == "passed", report.message
    assert [(w.name, w.status) for w in report.workloads] == [(BIG, "passed")] and report.workloads[0].trials > 0


@pytest.mark.slow  # a whole CPU evaluation (sandbox, solution process): 4-8 s
def test_one_skipped_and_one_passed_workload_is_a_passed_report(tasks_root: Path) -> None:
    report = evaluate(_task(tasks_root), NAIVE, "cpu", [BIG, SMALL], device_memory_bytes=1 * GIB)
    assert report.status == "passed", report.message
    # in the order asked for, the skipped one with its reason and no trial
    assert [(w.name, w.status) for w in report.workloads] == [(BIG, "skipped"), (SMALL, "passed")]
    assert report.workloads[0].trials == 0 and "this GPU has 1.0 GiB" in report.workloads[0].message


def test_on_the_cpu_without_a_size_nothing_is_refused_and_the_gpu_is_not_asked(
    tasks_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_probe(index: int) -> int:
        raise AssertionError("the GPU's memory was asked for on the CPU")

    monkeypatch.setattr(harness, "cuda_total_memory", no_probe)
    monkeypatch.setattr(harness, "_start_checker", _no_start)
    with pytest.raises(Started):  # it went on to start the checker for BIG
        harness.evaluate(_task(tasks_root), NAIVE, "cpu", [BIG])


def test_on_a_gpu_the_probe_is_asked_once_a_workload_declares_a_need(tasks_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def probe(index: int) -> int:
        asked.append(index)
        return 3 * GIB

    monkeypatch.setattr(harness, "cuda_total_memory", probe)
    task = _task(tasks_root)
    assert harness.memory_refusals(task, [SMALL], "cuda:1", None) == [] and asked == []  # no need declared: not asked
    [refused] = harness.memory_refusals(task, [SMALL, BIG], "cuda:1", None)
    assert asked == [1] and refused.name == BIG and refused.message.endswith("this GPU has 3.0 GiB")
    assert harness.memory_refusals(task, [BIG], "cuda", 5 * GIB) == [] and asked == [1]  # a given size wins


def test_the_report_status_sets_skipped_workloads_apart() -> None:
    passed, skipped = WorkloadResult(name="a", status="passed"), WorkloadResult(name="b", status="skipped")
    failed = WorkloadResult(name="c", status="incorrect_numerical")
    assert overall_status([skipped, passed], []) == "passed"
    assert overall_status([skipped], []) == "skipped"
    assert overall_status([skipped, failed, passed], []) == "incorrect_numerical"
    assert overall_status([skipped], [Violation(rule="numpy", detail="x")]) == "policy_violation"
    assert overall_status([], []) == "runtime_error"
    # the speedup is over the workloads that ran
    report = timed_report("t", {"a": (1.0, 4.0)})
    report.workloads.append(skipped)
    assert report.geomean_speedup() == pytest.approx(4.0)


def _cli_with_a_small_device(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    eval_cmd = sys.modules["workbench.cli.eval_cmd"]  # the module (the package exports the command's function)

    def small(*args: Any, **kwargs: Any) -> EvalReport:
        return harness.evaluate(*args, device_memory_bytes=size, **kwargs)

    monkeypatch.setattr(eval_cmd, "evaluate", small)


def test_eval_exits_0_with_a_skipped_line_for_an_all_skipped_evaluation(
    tasks_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cli_with_a_small_device(monkeypatch, 2 * GIB)
    args = ["eval", "muon_orthogonalize", str(NAIVE), "--device", "cpu", "--workload", BIG, "--tasks-dir", str(tasks_root)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"skipped: {BIG}: needs 4 GiB of device memory, this GPU has 2.0 GiB" in " ".join(result.stdout.split())
    as_json = CliRunner().invoke(app, [*args, "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["status"] == "skipped"


def test_a_skipped_status_is_shown_neutrally() -> None:
    assert status_style("skipped") not in ("red", "bold red") and status_style("incorrect_numerical") == "red"


def _regrade(status: str) -> RegradeResult:
    report = timed_report("t", {"a": (1.0, 1.0)}, status=status)  # type: ignore[arg-type]
    return RegradeResult("s", 2, "abc", "passed", report.status, 1.0, None, "h-old", "h-new", "cuda", False, report)


def test_a_regrade_skipped_on_a_smaller_device_is_no_flip() -> None:
    assert not _regrade("skipped").flipped and _regrade("skipped").skipped
    assert _regrade("incorrect_numerical").flipped


def test_the_memory_probe_runs_in_a_child_and_a_failing_one_checks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench import device

    monkeypatch.setattr(device, "NVIDIA_NODES", (str(tmp_path),))  # as if a driver were loaded here
    assert device._probe("import sys; print(int(sys.argv[1]) * 2**30)", "80") == 80 * GIB
    # this machine's torch has no CUDA device: the real probe fails in its child, and nothing is refused
    assert device.cuda_total_memory.__wrapped__(0) is None
