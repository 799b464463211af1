"""The Liger-Kernel library baselines (fused_linear_ce, fused_linear_jsd, gemm_swiglu): liger-kernel is no
dependency of the project (its wheel is carried to the GPU machine), so each task's `library` is checked three
ways. Everywhere, through stand-ins with the signatures of Liger's calls that compute their documented contract in
float64 (the arguments, leaves, gradients and outputs must give the task's result); where liger-kernel is
importable, the real call against the reference (on a CPU its Triton kernels under the interpreter, except
gemm_swiglu's: see CPU_CHECKED; on a GPU all of them); and without it, the one-line error that the harness's
timing note carries."""

from __future__ import annotations

import inspect
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from workbench.catalog import Catalog
from workbench.harness.checker.process import library_disagreement, time_library
from workbench.harness.protocol.report import TimingStats, WorkloadResult
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution.timing import TimingPlan

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASKS = ("fused_linear_ce", "fused_linear_jsd", "gemm_swiglu")
# The tasks whose Liger call gives its result under the Triton interpreter. Liger's SwiGLU kernel multiplies two
# bfloat16 tiles, which the interpreter computes on their raw bits (uint16): its result there means nothing.
CPU_CHECKED = ("fused_linear_ce", "fused_linear_jsd")


def _task_modules(task_id: str) -> tuple[ModuleType, ModuleType]:
    task = CATALOG.task(task_id)
    reference = import_file(task.file("reference.py"), f"_liger_{task_id}_reference")
    return reference, import_file(task.file("inputs.py"), f"_liger_{task_id}_inputs")


def _rel(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.double() - want.double()).norm() / want.double().norm()).item()


def _allowed(task_id: str, output: str, eager_error: float, factor: float | None = None) -> float:
    """The task's bound on `output`'s relative error from exact(): its rule's matrix_rel_fro, or `factor` (the
    rule's reference_error_factor unless given) times the reference's own error where that is larger."""
    rule = CATALOG.task(task_id).spec.tolerance.rule_for(output)
    assert rule.matrix_rel_fro is not None
    return max(rule.matrix_rel_fro, (factor or rule.reference_error_factor or 0.0) * eager_error)


def _outputs(task_id: str) -> list[str]:
    return [o.name for o in CATALOG.task(task_id).spec.signature.outputs]


def _tuple(out: torch.Tensor | tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """A task's outputs as a tuple (gemm_swiglu returns one tensor)."""
    return out if isinstance(out, tuple) else (out,)


def liger_fused_linear_cross_entropy(
    input: torch.Tensor,  # Liger's name
    weight: torch.Tensor,
    target: torch.Tensor,
    bias: torch.Tensor | None = None,
    ce_weight: torch.Tensor | None = None,
    ignore_index: int = -100,
    lse_square_scale: float = 0.0,
    label_smoothing: float = 0.0,
    reduction: str = "mean",
    softcap: float | None = None,
    return_z_loss: bool = False,
    accum_dtype: torch.dtype | None = None,
    use_token_scaling: bool = False,
    return_token_accuracy: bool = False,
    return_predicted_tokens: bool = False,
    chunk_mem_const: int = 1,
) -> torch.Tensor:
    """Liger's contract: the mean cross-entropy of ``input @ weight^T`` over the targets that are not
    ``ignore_index``, differentiable in ``input`` and ``weight`` (float64 here, a float32 loss as Liger's)."""
    assert bias is None and ce_weight is None and reduction == "mean" and softcap is None
    logits = input.double() @ weight.double().mT
    return F.cross_entropy(logits, target, ignore_index=ignore_index).float()


def liger_fused_linear_jsd(
    student_input: torch.Tensor,
    student_weight: torch.Tensor,
    teacher_input: torch.Tensor,
    teacher_weight: torch.Tensor,
    shift_labels: torch.Tensor | None = None,
    jsd_beta: float = 0.5,
    ignore_index: int = -100,
    temperature: float = 1.0,
    accum_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Liger's contract (LigerJSDFunction's docstring): JSD_beta = beta KL(P || M) + (1 - beta) KL(Q || M),
    M = beta P + (1 - beta) Q, P the teacher's and Q the student's softmax at the temperature; forward KL(P || Q)
    at beta 0, reverse KL(Q || P) at 1; the mean over the tokens whose label is not ``ignore_index``."""
    assert shift_labels is not None
    log_q = torch.log_softmax(student_input.double() @ student_weight.double().mT / temperature, dim=-1)
    log_p = torch.log_softmax(teacher_input.double() @ teacher_weight.double().mT / temperature, dim=-1)
    if jsd_beta == 0.0:
        per_token = (log_p.exp() * (log_p - log_q)).sum(-1)
    elif jsd_beta == 1.0:
        per_token = (log_q.exp() * (log_q - log_p)).sum(-1)
    else:
        log_m = torch.logaddexp(log_p + math.log(jsd_beta), log_q + math.log1p(-jsd_beta))
        kl_p = (log_p.exp() * (log_p - log_m)).sum(-1)
        kl_q = (log_q.exp() * (log_q - log_m)).sum(-1)
        per_token = jsd_beta * kl_p + (1.0 - jsd_beta) * kl_q
    keep = shift_labels != ignore_index
    return (torch.where(keep, per_token, 0.0).sum() / keep.sum()).float()


def liger_fused_gate_up_silu_mul(y: torch.Tensor, in_place: bool = False) -> torch.Tensor:
    """Liger's contract (``LigerFusedGateUpSiLUMulFunction.apply``): ``y [..., 2 F]`` holds the gate columns, then
    the up columns; returns ``silu(gate) * up`` ``[..., F]`` in ``y``'s dtype (float64 here, then rounded)."""
    assert not in_place  # in_place only changes its backward
    gate, up = y.double().chunk(2, dim=-1)
    return (F.silu(gate) * up).to(y.dtype)


STAND_INS = {
    "fused_linear_ce": liger_fused_linear_cross_entropy,
    "fused_linear_jsd": liger_fused_linear_jsd,
    "gemm_swiglu": liger_fused_gate_up_silu_mul,
}


def _smoke_inputs(task_id: str, inputs_module: ModuleType, seed: int) -> list[dict[str, Any]]:
    """Inputs of every smoke workload; for the JSD each workload once per kind of beta (0, 1, 0.5, between)."""
    out = []
    for workload in CATALOG.task(task_id).spec.smoke_workloads:
        inputs = inputs_module.make_inputs(workload.axes, seed, "cpu")
        betas = (0.0, 1.0, 0.5, 0.3) if task_id == "fused_linear_jsd" else (None,)
        out += [inputs if beta is None else {**inputs, "beta": beta} for beta in betas]
    return out


def test_the_tasks_name_liger_as_their_gpu_baseline_and_the_wheel_script_carries_that_version() -> None:
    script = (REPO / "scripts" / "fetch_device_wheels.sh").read_text()
    for task_id in TASKS:
        spec = CATALOG.task(task_id).spec.library
        reference, _ = _task_modules(task_id)
        assert spec is not None and spec.same_result and not spec.cpu
        assert f"liger-kernel {reference.LIGER_VERSION}" in spec.call
        assert f"liger-kernel=={reference.LIGER_VERSION}" in script
        assert callable(getattr(reference, spec.function))


@pytest.mark.parametrize("task_id", TASKS)
def test_the_library_call_through_liger_s_contract_gives_the_tasks_result(task_id: str) -> None:
    """Liger's contract in float64 behind the wrapper: the task's outputs (shapes, dtypes, order), each within
    the task's bound of exact() (only the outputs' bfloat16 rounding is left)."""
    reference, inputs_module = _task_modules(task_id)
    for inputs in _smoke_inputs(task_id, inputs_module, seed=7):
        got = _tuple(reference.library(**inputs, op=STAND_INS[task_id]))
        want, eager = _tuple(reference.exact(**inputs)), _tuple(reference.reference(**inputs))
        assert [(t.shape, t.dtype) for t in got] == [(t.shape, t.dtype) for t in eager]
        for name, g, w in zip(_outputs(task_id), got, want, strict=True):
            assert _rel(g, w) <= _allowed(task_id, name, 0.0), f"{name} at beta {inputs.get('beta')}: {_rel(g, w):.2e}"


def test_a_wrong_beta_convention_is_caught_by_the_contract_test() -> None:
    """The check above can fail: beta read as the student's weight (the other convention) is far off."""
    reference, inputs_module = _task_modules("fused_linear_jsd")
    inputs = {**_smoke_inputs("fused_linear_jsd", inputs_module, seed=7)[0], "beta": 0.0}

    def flipped(*args: Any, jsd_beta: float, **kwargs: Any) -> torch.Tensor:
        return liger_fused_linear_jsd(*args, jsd_beta=1.0 - jsd_beta, **kwargs)

    _, dhs, _ = reference.library(**inputs, op=flipped)
    assert _rel(dhs, reference.exact(**inputs)[1]) > 0.1


def test_gate_and_up_swapped_are_caught_by_the_contract_test() -> None:
    """The check above can fail: a SwiGLU that reads the up half as the gate (the other layout) is far off."""
    reference, inputs_module = _task_modules("gemm_swiglu")
    inputs = _smoke_inputs("gemm_swiglu", inputs_module, seed=7)[0]

    def swapped(y: torch.Tensor, in_place: bool = False) -> torch.Tensor:
        return liger_fused_gate_up_silu_mul(torch.cat(y.chunk(2, dim=-1)[::-1], dim=-1), in_place)

    assert _rel(reference.library(**inputs, op=swapped), reference.exact(**inputs)) > 0.1


def test_without_liger_library_raises_one_line_and_the_evaluation_keeps_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.partition(".")[0] == "liger_kernel"] + ["liger_kernel"]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it now fails, installed or not
    for task_id in TASKS:
        task = CATALOG.task(task_id)
        reference, inputs_module = _task_modules(task_id)
        inputs = inputs_module.make_inputs(task.spec.smoke_workloads[0].axes, 3, "cpu")
        with pytest.raises(ModuleNotFoundError, match="liger_kernel"):
            reference.library(**inputs)
        stats = TimingStats(mean_ms=1.0, median_ms=1.0, min_ms=1.0, max_ms=1.0, std_ms=0.0, reps=1, rel_sem=0.0, method="events")
        result = WorkloadResult(name="w", status="passed", reference=stats)
        time_library(task, result, reference, [inputs], torch.device("cpu"), "events", TimingPlan())
        assert result.status == "passed" and result.library is None
        assert "could not be timed: ModuleNotFoundError" in result.timing_note and "liger_kernel" in result.timing_note
        assert task.spec.library is not None and "liger-kernel 0.8.5" in task.spec.library.call  # what to install


def _liger_functional() -> ModuleType:
    return pytest.importorskip("liger_kernel.transformers.functional", reason="liger-kernel is not installed")


def _liger_parameters(task_id: str) -> list[str]:
    """The parameters of the Liger call the task's library() makes: a functional API, or for gemm_swiglu
    ``LigerFusedGateUpSiLUMulFunction.apply`` (its ``forward`` without ``ctx``)."""
    if task_id == "gemm_swiglu":
        ops = pytest.importorskip("liger_kernel.ops", reason="liger-kernel is not installed")
        return list(inspect.signature(ops.LigerFusedGateUpSiLUMulFunction.forward).parameters)[1:]
    return list(inspect.signature(getattr(_liger_functional(), STAND_INS[task_id].__name__)).parameters)


@pytest.mark.parametrize("task_id", TASKS)
def test_the_stand_ins_take_liger_s_arguments(task_id: str) -> None:
    assert _liger_parameters(task_id) == list(inspect.signature(STAND_INS[task_id]).parameters)


@pytest.mark.parametrize("task_id", CPU_CHECKED)
def test_liger_itself_gives_the_reference_s_result_on_the_smoke_workloads(task_id: str) -> None:
    """Where liger-kernel is installed, its real call (Triton kernels; under the interpreter on a CPU, where its
    logits are bfloat16 as the reference's): the harness's agreement check passes, and each output is within
    the task's bound of exact() or twice the reference's own error, whichever is larger."""
    _liger_functional()
    reference, inputs_module = _task_modules(task_id)
    for inputs in _smoke_inputs(task_id, inputs_module, seed=9):
        got, eager = _tuple(reference.library(**inputs)), _tuple(reference.reference(**inputs))
        want = _tuple(reference.exact(**inputs))
        assert library_disagreement(got, eager) is None
        assert [(t.shape, t.dtype) for t in got] == [(t.shape, t.dtype) for t in eager]
        for name, g, e, w in zip(_outputs(task_id), got, eager, want, strict=True):
            allowed = _allowed(task_id, name, _rel(e, w), factor=2.0)
            assert _rel(g, w) <= allowed, f"{name} at beta {inputs.get('beta')}: {_rel(g, w):.2e} > {allowed:.2e}"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("task_id", TASKS)
def test_gpu_liger_meets_the_tasks_tolerance_on_the_registered_workloads(task_id: str) -> None:
    """At the shapes it is timed at (its CUDA paths: float32 GEMM outputs for the JSD, dW accumulated in bfloat16
    over 16-64 chunks, the SwiGLU kernel gemm_swiglu's CPU run cannot check): each output within the bound the
    task sets a solution, from exact()."""
    _liger_functional()
    task = CATALOG.task(task_id)
    reference, inputs_module = _task_modules(task_id)
    for seed, workload in enumerate(task.spec.workloads, start=31):
        inputs = inputs_module.make_inputs(workload.axes, seed, "cuda")
        want = _tuple(reference.exact(**inputs))
        errors = [_rel(g, w) for g, w in zip(_tuple(reference.library(**inputs)), want, strict=True)]
        eager_errors = [_rel(e, w) for e, w in zip(_tuple(reference.reference(**inputs)), want, strict=True)]
        for name, err, eager_err in zip(_outputs(task_id), errors, eager_errors, strict=True):
            allowed = _allowed(task_id, name, eager_err)
            assert err <= allowed, f"{workload.name} {name}: {err:.2e} > {allowed:.2e} (reference {eager_err:.2e})"
        del inputs, want
        torch.cuda.empty_cache()
