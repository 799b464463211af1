"""`bench tasks` survives being cut off (issue 55): each task's report is written atomically as it finishes, and
`--resume DIR` keeps the complete reports of this harness (on this GPU) instead of evaluating their tasks again;
its table gives each process's peak device memory per workload. All on the CPU: the parts that decide, not
the evaluations."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from workbench.catalog import Catalog
from workbench.cli.bench_cmd import expert_table, resumable_reports, write_report
from workbench.harness.host.version import harness_version
from workbench.harness.protocol.report import EvalReport, WorkloadResult

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
IDS = ("muon_orthogonalize", "fused_adamw", "fused_linear_ce", "rmsnorm_bwd", "splitk_gemm", "gemm_swiglu", "moe_permute")
GPU = "NVIDIA H100 80GB HBM3"


def _report(task: str, version: str, device_name: str = GPU) -> EvalReport:
    workloads = [WorkloadResult(name="w", status="passed", checker_peak_mib=1536.0, solution_peak_mib=None)]
    return EvalReport(
        task=task, solution="expert.py", device="cuda", status="passed", workloads=workloads, device_name=device_name,
        harness_version=version,
    )  # fmt: skip


def test_resume_keeps_complete_reports_of_this_harness_and_says_why_it_drops_the_others(tmp_path: Path) -> None:
    tasks = [CATALOG.task(t) for t in IDS]
    version = harness_version()
    done, truncated, older, other_task, other_gpu, no_gpu, missing = IDS
    write_report(tmp_path, f"{done}.json", _report(done, version))
    text = _report(truncated, version).model_dump_json(indent=2)
    (tmp_path / f"{truncated}.json").write_text(text[: len(text) // 2])  # cut off mid-write by an older bench
    write_report(tmp_path, f"{older}.json", _report(older, "h-0123456789abcdef"))
    write_report(tmp_path, f"{other_task}.json", _report(done, version))
    write_report(tmp_path, f"{other_gpu}.json", _report(other_gpu, version, device_name="NVIDIA H200"))
    write_report(tmp_path, f"{no_gpu}.json", _report(no_gpu, version, device_name=""))  # e.g. every workload skipped

    kept, notes = resumable_reports(tmp_path, tasks, version, GPU)
    assert sorted(kept) == sorted([done, no_gpu]) and kept[done].workloads[0].checker_peak_mib == 1536.0
    assert missing not in kept and not any(note.startswith(missing) for note in notes)  # never run: just evaluated
    assert [note.split(":")[0] for note in notes] == [truncated, older, other_task, other_gpu]
    assert all("evaluated again" in note and "\n" not in note for note in notes)
    assert "not a complete report" in notes[0]
    assert "h-0123456789abcdef" in notes[1] and version in notes[1]
    assert f"a report of task {done}" in notes[2] and "NVIDIA H200" in notes[3]
    # without a device to match, any device's report of this harness is kept
    kept_any, _ = resumable_reports(tmp_path, tasks, version)
    assert other_gpu in kept_any


def test_a_report_is_replaced_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _report("muon_orthogonalize", "h-1")
    path = write_report(tmp_path, "muon_orthogonalize.json", first)
    assert EvalReport.model_validate_json(path.read_text()) == first and list(tmp_path.iterdir()) == [path]

    def killed(src: object, dst: object) -> None:
        raise KeyboardInterrupt  # the run is cut off between writing and renaming

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write_report(tmp_path, "muon_orthogonalize.json", _report("muon_orthogonalize", "h-2"))
    assert EvalReport.model_validate_json(path.read_text()).harness_version == "h-1"  # the old report, whole
    assert sorted(tmp_path.glob("*.json")) == [path]  # the half-written one is not a report the next run reads


def test_the_table_gives_each_process_peak_in_gib() -> None:
    task = CATALOG.task("muon_orthogonalize")
    console = Console(width=400, record=True)
    console.print(expert_table([(task, _report(task.id, "h-1"))], GPU, None))
    text = console.export_text()
    header = next(line for line in text.splitlines() if "checker GiB" in line)
    row = next(line for line in text.splitlines() if "muon_orthogonalize" in line and "passed" in line)
    assert "solution GiB" in header
    assert row.split("│")[-3].strip() == "1.5" and row.split("│")[-2].strip() == "-"
