"""The tasks' library baselines (task.toml [library]): the named call computes the task's result, and an
evaluation whose baseline cannot be timed keeps its verdict with a note."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.catalog.task import LibraryBaseline
from workbench.harness.checker.process import time_library
from workbench.harness.protocol.report import TimingStats, WorkloadResult
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution.timing import TimingPlan

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
WITH_LIBRARY = [t.id for t in CATALOG.tasks() if t.spec.library is not None]


def test_the_attention_tasks_name_their_library_call() -> None:
    assert {"causal_attention_fwd", "windowed_attention"} <= set(WITH_LIBRARY)


@pytest.mark.parametrize("task_id", WITH_LIBRARY)
def test_the_library_baseline_computes_the_tasks_result_on_fresh_inputs(task_id: str) -> None:
    """Where `same_result` holds, the library call's output is within the task's tolerance of the float64 oracle
    on every smoke workload (on the CPU: its math backend)."""
    task = CATALOG.task(task_id)
    spec = task.spec.library
    assert spec is not None and spec.same_result
    reference = import_file(task.file("reference.py"), f"_library_{task_id}_reference")
    inputs_module = import_file(task.file("inputs.py"), f"_library_{task_id}_inputs")
    library = getattr(reference, spec.function)
    oracle = getattr(reference, "exact", reference.reference)
    bound = task.spec.tolerance.matrix_rel_fro or 2e-2
    for seed, workload in enumerate(task.spec.smoke_workloads, start=11):
        inputs = inputs_module.make_inputs(workload.axes, seed, "cpu")
        got = library(**inputs).double()
        want = oracle(**inputs).double()
        rel = ((got - want).norm() / want.norm()).item()
        assert rel <= bound, f"{workload.name}: library rel err {rel:.2e} > {bound:.0e}"
        assert not torch.equal(got, torch.zeros_like(got))


def test_a_library_baseline_that_cannot_be_timed_leaves_a_note_not_a_failure() -> None:
    task = CATALOG.task("causal_attention_fwd")
    spec = LibraryBaseline(call="a call this torch lacks", function="missing_library")
    task = task.model_copy(update={"spec": task.spec.model_copy(update={"library": spec})})
    stats = TimingStats(mean_ms=1.0, median_ms=1.0, min_ms=1.0, max_ms=1.0, std_ms=0.0, reps=10, rel_sem=0.0, method="events")
    result = WorkloadResult(name="w", status="passed", reference=stats)
    time_library(task, result, types.ModuleType("reference"), [], torch.device("cpu"), "events", TimingPlan())
    assert result.status == "passed" and result.library is None
    assert "the library baseline (a call this torch lacks) could not be timed: AttributeError" in result.timing_note


def test_the_library_section_is_strict() -> None:
    with pytest.raises(ValueError, match="extra"):
        LibraryBaseline.model_validate({"call": "x", "speed": 1})
    with pytest.raises(ValueError):
        LibraryBaseline.model_validate({"call": ""})
