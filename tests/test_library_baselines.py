"""The tasks' library baselines (task.toml [library]): the named call computes the task's result, and an
evaluation whose baseline cannot be timed keeps its verdict with a note."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
import torch

from workbench.catalog import Catalog
from workbench.catalog.task import LibraryBaseline, Workload, argument_of
from workbench.harness.checker.compare import compare
from workbench.harness.checker.process import LIBRARY_AGREEMENT, _result_of, library_disagreement, time_library
from workbench.harness.protocol.report import TimingStats, WorkloadResult
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution.timing import TimingPlan

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
WITH_LIBRARY = [t.id for t in CATALOG.tasks() if t.spec.library is not None]


def test_the_tasks_with_an_importable_library_name_their_call() -> None:
    named = {"causal_attention_fwd", "windowed_attention", "causal_attention_bwd", "fp8_block_gemm"}
    named |= {"moe_grouped_gemm_bwd", "fused_moe_forward", "gemm_swiglu", "fused_linear_ce"}
    assert named <= set(WITH_LIBRARY)


def _matrices(out: object) -> list[torch.Tensor]:
    """A task's outputs (one tensor or a tuple of them) as a list of float64 tensors."""
    return [t.double() for t in (out if isinstance(out, tuple) else (out,))]  # type: ignore[union-attr]


def _check_views(
    task_id: str,
    reference: types.ModuleType,
    workload: Workload,
    inputs: dict[str, Any],
    got: list[torch.Tensor],
    want: list[torch.Tensor],
) -> None:
    """Where the task judges views of its outputs (`tolerance.views`: every token's row its own matrix, say), the
    library's views meet the rule a solution's must at `workload`, view by view."""
    task = CATALOG.task(task_id)
    views = task.spec.tolerance.views
    if views is None:
        return
    names = [o.name for o in task.spec.signature.outputs]
    got_views = getattr(reference, views)(dict(zip(names, got, strict=True)), inputs)
    want_views = getattr(reference, views)(dict(zip(names, want, strict=True)), inputs)
    rule = task.tolerance_for(workload)
    for name, value in want_views.items():
        verdict = compare(got_views[name], value, rule.rule_for(name))
        assert verdict.ok, f"{workload.name}: library {name} ({views}): {verdict.message}"


def _check_library_result(task_id: str, device: str) -> None:
    """On every smoke workload, each of the library call's outputs is within the task's tolerance of the float64
    oracle (relative Frobenius error over the whole output, and the task's own rule on its views where it has
    them) and not all zeros."""
    task = CATALOG.task(task_id)
    spec = task.spec.library
    assert spec is not None and spec.same_result
    reference = import_file(task.file("reference.py"), f"_library_{task_id}_reference")
    inputs_module = import_file(task.file("inputs.py"), f"_library_{task_id}_inputs")
    library = getattr(reference, spec.function)
    oracle = getattr(reference, "exact", reference.reference)
    bound = task.spec.tolerance.matrix_rel_fro or 2e-2
    for seed, workload in enumerate(task.spec.smoke_workloads, start=11):
        inputs = inputs_module.make_inputs(workload.axes, seed, device)
        if not task.spec.signature.outputs:  # an in-place task (an optimiser step): its state, element by element
            names = task.tensor_names(workload, state_only=True)
            got_state, want_state = _result_of(library, task, inputs), _result_of(oracle, task, inputs)
            for name, g, w in zip(names, got_state, want_state, strict=True):
                verdict = compare(g, w, task.spec.tolerance.rule_for(argument_of(name)))
                assert verdict.ok, f"{workload.name}: library {name}: {verdict.message}"
            continue
        got, want = _matrices(library(**inputs)), _matrices(oracle(**inputs))
        assert len(got) == len(want)
        _check_views(task_id, reference, workload, inputs, got, want)
        for g, w in zip(got, want, strict=True):
            rel = ((g - w).norm() / w.norm()).item()
            assert rel <= bound, f"{workload.name}: library rel err {rel:.2e} > {bound:.0e}"
            assert not torch.equal(g, torch.zeros_like(g))


@pytest.mark.parametrize("task_id", [t for t in WITH_LIBRARY if CATALOG.task(t).spec.library.cpu])  # type: ignore[union-attr]
def test_the_library_baseline_computes_the_tasks_result_on_fresh_inputs(task_id: str) -> None:
    """Where the call runs on the CPU (its math backend there)."""
    _check_library_result(task_id, "cpu")


def test_the_moe_forward_library_is_judged_token_by_token() -> None:
    """fused_moe_forward's grouped-GEMM baseline is checked on the task's views (every token's row its own
    matrix): one token's row 5% off (a wrong routing weight) fails the check, though the whole output is within
    the task's bound."""
    task = CATALOG.task("fused_moe_forward")
    reference = import_file(task.file("reference.py"), "_library_views_reference")
    inputs_module = import_file(task.file("inputs.py"), "_library_views_inputs")
    workload = task.spec.smoke_workloads[1]
    inputs = inputs_module.make_inputs(workload.axes, 5, "cpu")
    got, want = _matrices(reference.library(**inputs)), _matrices(reference.exact(**inputs))
    _check_views("fused_moe_forward", reference, workload, inputs, got, want)
    got[0][3] *= 1.05  # token 3's row 5% off
    assert ((got[0] - want[0]).norm() / want[0].norm()).item() <= task.spec.tolerance.matrix_rel_fro
    with pytest.raises(AssertionError, match=r"library out \(rows\)"):
        _check_views("fused_moe_forward", reference, workload, inputs, got, want)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("task_id", WITH_LIBRARY)
def test_gpu_the_library_baseline_agrees_with_the_reference_on_the_registered_workloads(task_id: str) -> None:
    """Every library baseline, CUDA-only calls included, at the shapes it is timed at: the check the harness makes
    before timing it passes on fresh inputs of every registered workload."""
    task = CATALOG.task(task_id)
    spec = task.spec.library
    assert spec is not None
    reference = import_file(task.file("reference.py"), f"_library_gpu_{task_id}_reference")
    inputs_module = import_file(task.file("inputs.py"), f"_library_gpu_{task_id}_inputs")
    for seed, workload in enumerate(task.spec.workloads, start=21):
        inputs = inputs_module.make_inputs(workload.axes, seed, "cuda")
        assert library_disagreement(getattr(reference, spec.function)(**inputs), reference.reference(**inputs)) is None
        del inputs
        torch.cuda.empty_cache()


def test_cuda_only_baselines_are_marked_so() -> None:
    """The flash backward op and the block-scaled FP8 GEMM have no CPU kernels: they are checked on the GPU."""
    for task_id in ("causal_attention_bwd", "fp8_block_gemm"):
        spec = CATALOG.task(task_id).spec.library
        assert spec is not None and not spec.cpu


def test_a_library_baseline_that_cannot_be_timed_leaves_a_note_not_a_failure() -> None:
    task = CATALOG.task("causal_attention_fwd")
    spec = LibraryBaseline(call="a call this torch lacks", function="missing_library")
    task = task.model_copy(update={"spec": task.spec.model_copy(update={"library": spec})})
    stats = TimingStats(mean_ms=1.0, median_ms=1.0, min_ms=1.0, max_ms=1.0, std_ms=0.0, reps=10, rel_sem=0.0, method="events")
    result = WorkloadResult(name="w", status="passed", reference=stats)
    time_library(task, result, types.ModuleType("reference"), [], torch.device("cpu"), "events", TimingPlan())
    assert result.status == "passed" and result.library is None
    assert "the library baseline (a call this torch lacks) could not be timed: AttributeError" in result.timing_note


def _stats() -> TimingStats:
    return TimingStats(mean_ms=1.0, median_ms=1.0, min_ms=1.0, max_ms=1.0, std_ms=0.0, reps=10, rel_sem=0.0, method="events")


def test_a_library_call_that_computes_something_else_is_not_timed() -> None:
    """A baseline whose output is far from the reference's on the same inputs (a scale layout misread at this
    shape) is refused before timing, with a note; the verdict stands and no library figure is reported."""
    task = CATALOG.task("fp8_block_gemm")
    module = types.ModuleType("reference")
    module.reference = lambda x: x * 2.0  # type: ignore[attr-defined]
    module.library = lambda x: x * 2.0 + 1e4  # type: ignore[attr-defined]
    result = WorkloadResult(name="w", status="passed", reference=_stats())
    args = [{"x": torch.randn(64, 64, generator=torch.Generator().manual_seed(1))}]
    time_library(task, result, module, args, torch.device("cpu"), "events", TimingPlan())
    assert result.status == "passed" and result.library is None
    assert "could not be timed: ValueError: its output 0 differs from the reference's by" in result.timing_note


def test_library_agreement_tolerates_rounding_and_refuses_wrong_results() -> None:
    g = torch.Generator().manual_seed(2)
    want = torch.randn(128, 256, generator=g)
    rounded = want.to(torch.bfloat16)  # an honest bfloat16 result: about 2e-3 off
    assert library_disagreement(rounded, want) is None
    assert library_disagreement((rounded, rounded), (want, want)) is None
    assert "output 1" in str(library_disagreement((rounded, want.flip(0)), (want, want)))
    assert "output 0" in str(library_disagreement(want * (1 + 2 * LIBRARY_AGREEMENT), want))
    assert "output 0" in str(library_disagreement(torch.full_like(want, float("nan")), want))
    assert "outputs" in str(library_disagreement((want,), (want, want)))
    assert "shape" in str(library_disagreement(want[:, :8], want))


def test_the_library_section_is_strict() -> None:
    with pytest.raises(ValueError, match="extra"):
        LibraryBaseline.model_validate({"call": "x", "speed": 1})
    with pytest.raises(ValueError):
        LibraryBaseline.model_validate({"call": ""})


def test_the_gpu_checker_keeps_its_autotuned_configs_and_the_user_may_say_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library baseline's autotuning (flash-linear-attention's kernels: 50 s on a fresh H100) is paid once
    per machine: the GPU checker's Triton keeps its chosen configs on disk, unless the user set the knob."""
    from workbench.harness.host.evaluate import worker_env
    from workbench.harness.host.sandbox import worker_env as sandboxed_env

    monkeypatch.delenv("TRITON_CACHE_AUTOTUNING", raising=False)
    assert worker_env("cuda")["TRITON_CACHE_AUTOTUNING"] == "1"
    assert "TRITON_CACHE_AUTOTUNING" not in worker_env("cpu")  # the interpreter does not autotune
    assert "TRITON_CACHE_AUTOTUNING" not in sandboxed_env("cuda")  # the solution's process: its own cache only
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "0")
    assert worker_env("cuda")["TRITON_CACHE_AUTOTUNING"] == "0"
