"""The rmsnorm_bwd task: formulas checked by autograd, inputs, the expert and the naive solution."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("rmsnorm_bwd")
reference = import_file(TASK.file("reference.py"), "_test_rmsnorm_bwd_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_rmsnorm_bwd_inputs")
expert = import_file(TASK.file("expert.py"), "_test_rmsnorm_bwd_expert")
NAIVE = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
naive = import_file(NAIVE, "_test_rmsnorm_bwd_naive")


def autograd_float64(d: dict[str, torch.Tensor], eps: float = inputs.EPS) -> tuple[torch.Tensor, torch.Tensor]:
    """dX and dW by differentiating the float64 RMSNorm forward (rstd recomputed by the forward)."""
    x = d["X"].double().requires_grad_(True)
    w = d["W"].double().requires_grad_(True)
    y = x * torch.rsqrt(x.square().mean(dim=1, keepdim=True) + eps) * w
    y.backward(d["dY"].double())
    assert x.grad is not None and w.grad is not None
    return x.grad, w.grad


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


@pytest.mark.parametrize(("M", "N"), [(16, 64), (33, 100)])
def test_exact_formula_matches_autograd(M: int, N: int) -> None:
    d = inputs.make_inputs({"M": M, "N": N}, seed=M, device="cpu")
    d["rstd"] = torch.rsqrt(d["X"].double().square().mean(dim=1) + inputs.EPS)  # float64 rstd for autograd
    dX, dW = autograd_float64(d)
    # exact() checks dtypes, so give it the float32 rstd and compare at float32-rstd precision
    eX, eW = reference.exact(d["dY"], d["X"], d["W"], d["rstd"].float())
    assert rel(eX, dX) < 1e-6 and rel(eW, dW) < 1e-6


def test_reference_is_float32_math_and_close_to_exact() -> None:
    d = inputs.make_inputs({"M": 64, "N": 256}, seed=3, device="cpu")
    dX, dW = reference.reference(**d)
    assert dX.dtype == torch.bfloat16 and dX.shape == (64, 256) and dX.is_contiguous()
    assert dW.dtype == torch.float32 and dW.shape == (256,)
    eX, eW = reference.exact(**d)
    assert 5e-4 < rel(dX, eX) < 3e-3  # bfloat16 rounding of dX
    assert rel(dW, eW) < 1e-5  # float32 reduction


def test_inputs_are_deterministic_realistic_and_every_output_moves() -> None:
    wl = {"M": 48, "N": 96}
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert (a["dY"].dtype, a["X"].dtype, a["W"].dtype, a["rstd"].dtype) == (torch.bfloat16,) * 3 + (torch.float32,)
    rms = a["X"].float().square().mean(dim=1).sqrt()
    assert float(rms.max() / rms.min()) > 2  # per-row scale variation
    assert torch.allclose(a["rstd"], torch.rsqrt(a["X"].float().square().mean(dim=1) + inputs.EPS))
    assert 0.5 < float(a["W"].float().mean()) < 1.5 and float(a["W"].float().std()) > 0.1
    base = reference.exact(**a)
    # the row term is not negligible: dropping it is far outside the tolerance
    no_mean = a["dY"].double() * a["W"].double() * a["rstd"].double().unsqueeze(1)
    assert rel(no_mean, base[0]) > 0.2
    for name in a:  # every input moves dX; every input but W moves dW
        changed = {k: v.clone() for k, v in a.items()}
        changed[name] = (changed[name].float() * 1.5).to(changed[name].dtype)
        new = reference.exact(**changed)
        assert rel(new[0], base[0]) > 1e-3, name
        assert (rel(new[1], base[1]) > 1e-3) == (name != "W"), name


@pytest.mark.parametrize(("M", "N"), [(64, 256), (90, 320), (7, 1000)])
def test_expert_and_naive_match_exact_in_process(M: int, N: int) -> None:
    d = inputs.make_inputs({"M": M, "N": N}, seed=1, device="cpu")
    oracle = reference.exact(**d)
    tol = TASK.spec.tolerance
    for solution in (expert, naive):
        outs = solution.run(**d)
        assert outs[0].dtype == torch.bfloat16 and outs[1].dtype == torch.float32
        for out, exp in zip(outs, oracle, strict=True):
            result = compare(out, exp, tol)
            assert result.ok and result.rel_err < 0.5 * tol.matrix_rel_fro, (solution.__name__, result.message)


def test_group_count_follows_n_and_m() -> None:
    # the registered shapes on a 132-SM H200, with the GPU budget of 16384 elements per SM
    per_sm = 16384
    sms = 132
    target = {n: max(sms, sms * per_sm // n) for n in (2048, 4096, 8192)}
    assert target == {2048: 1056, 4096: 528, 8192: 264}
    for M, N in [(64, 256), (90, 320), (128, 512), (3, 4096)]:
        groups, rows = expert.num_groups(M, N, 4)
        assert 1 <= groups <= M and (groups - 1) * rows < M <= groups * rows
    assert expert.num_groups(90, 320, 4) == (23, 4)  # a ragged last group on a smoke workload
