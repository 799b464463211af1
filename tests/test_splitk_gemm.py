"""splitk_gemm: the reference, the inputs, the expert's and the naive solution's results in process, the expert's
determinism and its configurations. The harness's runs (smoke workloads) are in tests/test_task_suite.py."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("splitk_gemm")


def _module(name: str, path: Path | None = None) -> ModuleType:
    """The task's file ``name``.py (or ``path``), imported under a name private to this test module."""
    return import_file(path or TASK.file(f"{name}.py"), f"_test_splitk_gemm_{name}")


reference, inputs, expert = (_module(name) for name in ("reference", "inputs", "expert"))
naive = _module("naive", REPO / "tests" / "solutions" / "splitk_gemm_naive.py")


def rel(got: torch.Tensor, want: torch.Tensor) -> float:
    """Relative Frobenius distance of ``got`` from ``want`` (float64)."""
    want = want.double()
    return float(torch.linalg.vector_norm(got.double() - want) / torch.linalg.vector_norm(want))


def test_exact_is_a_times_w_transposed() -> None:
    a = torch.tensor([[1.0, 2.0, 0.5]], dtype=torch.bfloat16)
    w = torch.tensor([[1.0, 0.0, 0.0], [0.0, -1.0, 2.0]], dtype=torch.bfloat16)  # nn.Linear layout [N, K]
    assert torch.equal(reference.exact(a, w), torch.tensor([[1.0, -1.0]], dtype=torch.float64))
    with pytest.raises(ValueError):
        reference.reference(a, w.t().contiguous())  # [K, N] is not the contract


def test_reference_is_bf16_rounded_once() -> None:
    d = inputs.make_inputs({"M": 16, "K": 1000, "N": 96}, seed=3, device="cpu")
    c = reference.reference(**d)
    assert c.dtype == torch.bfloat16 and c.shape == (16, 96) and c.is_contiguous()
    oracle = reference.exact(**d)
    once = oracle.float().to(torch.bfloat16)
    assert rel(c, oracle) < 1.02 * rel(once, oracle) < 2e-3  # fp32 accumulation, one rounding


def test_inputs_are_deterministic_realistic_and_every_input_moves_the_output() -> None:
    wl = {"M": 8, "K": 1024, "N": 128}
    d, again = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(d[k], again[k]) for k in d)
    a, w = d["a"].float(), d["w"].float()
    assert a.shape == (8, 1024) and w.shape == (128, 1024) and d["a"].dtype == d["w"].dtype == torch.bfloat16
    assert 0.8 < float(w.std()) * 1024**0.5 < 1.3  # std ~ 1 / sqrt(K)
    big = a.abs().amax(dim=0)
    assert (big > 8).sum() >= 4 and float(big.median()) < 4  # a few outlier channels, the rest near unit scale
    rms = a.square().mean(dim=1).sqrt()
    assert float(rms.min()) > 0.7 and float(rms.max()) < 2.0  # normed rows (times the norm's gains)
    base = reference.exact(**d)
    assert 0.5 < float(base.std()) < 2.5 and len(torch.unique(base)) == base.numel()
    for name in d:  # every input moves c, and so does one row of each
        changed = dict(d)
        changed[name] = (d[name].float() * 1.5).to(torch.bfloat16)
        assert rel(reference.exact(**changed), base) > 0.1, name
        one_row = d[name].clone()
        one_row[-1] = -one_row[-1]
        changed[name] = one_row
        assert rel(reference.exact(**changed), base) > 0.05, name
    other = inputs.make_inputs(wl, seed=8, device="cpu")
    assert rel(reference.exact(**other), base) > 0.5  # the seed decides the values


def test_k_ranges_cover_k_exactly_once() -> None:
    """k_span's arithmetic: whole K steps per range, no empty range, the last one holding the rest."""
    for K in (1, 31, 96, 200, 296, 4096, 7168, 8192):
        for split_k in (1, 2, 3, 4, 8):
            for block_k in (32, 128):
                span, splits = expert.k_span(K, split_k, block_k)
                assert span % block_k == 0 and 1 <= splits <= split_k
                covered = [k for s in range(splits) for k in range(s * span, min(K, (s + 1) * span))]
                assert covered == list(range(K)), (K, split_k, block_k)


@pytest.mark.slow  # kernels under the interpreter, in process (~2 s on a 2-core CPU)
@pytest.mark.parametrize(("M", "K", "N"), [(24, 136, 72), (40, 72, 40), (16, 192, 64)])
def test_expert_and_naive_match_exact_in_process(M: int, K: int, N: int, interpreter_fixed: None) -> None:
    """Shapes beside the smoke workloads: two and three row blocks (ragged), a K of 2-5 steps, and a shape
    whose K ranges and column blocks are all whole (the unmasked EVEN path the registered shapes take)."""
    made = inputs.make_inputs({"M": M, "K": K, "N": N}, seed=M + K, device="cpu")
    want = reference.exact(**made)
    bound = TASK.spec.tolerance.matrix_rel_fro or 0.0
    for name, got in (("expert", expert.run(**made)), ("naive", naive.run(**made))):
        assert (got.dtype, tuple(got.shape), got.is_contiguous()) == (torch.bfloat16, (M, N), True), name
        verdict = compare(got, want, TASK.spec.tolerance)
        assert verdict.ok and verdict.rel_err < bound / 2, f"{name}: {verdict.message}"


@pytest.mark.slow  # kernels under the interpreter, in process (~1 s on a 2-core CPU)
def test_expert_is_deterministic(interpreter_fixed: None) -> None:
    """Two calls on the same inputs give bitwise-equal outputs (a fixed-order split-K reduction), on a smoke
    workload that runs three K ranges and the reduction kernel."""
    d = inputs.make_inputs(TASK.spec.smoke_workloads[0].axes, seed=5, device="cpu")
    first, second = expert.run(**d), expert.run(**d)
    assert torch.equal(first.view(torch.int16), second.view(torch.int16))


def test_registered_shapes_have_configs_that_fill_the_h200() -> None:
    cuda = torch.device("cuda")
    for workload in TASK.spec.workloads:
        M, K, N = workload.axes["M"], workload.axes["K"], workload.axes["N"]
        assert (M, K, N) in expert.H200_CONFIGS
        cfg = expert.config_for(M, K, N, cuda)
        assert cfg.block_m >= M and cfg.block_m in (16, 32, 64)  # all tokens in one row tile
        span, splits = expert.k_span(K, cfg.split_k, cfg.block_k)
        units = -(-N // cfg.block_n) * splits
        assert 100 <= units <= 16 * 132, workload.name  # about one work unit per SM or more (measured best: 112-256)
        assert cfg.num_stages >= 3 and cfg.block_k >= 64 and span >= 4 * cfg.block_k
        assert 4 * splits * M * N <= 0.15 * 2 * N * K  # the fp32 workspace is small beside w


def test_smoke_configs_exercise_splits_and_ragged_edges() -> None:
    cfg = expert.config_for(1, 1, 1, torch.device("cpu"))
    smoke = TASK.spec.smoke_workloads
    for workload in smoke:
        K = workload.axes["K"]
        _, splits = expert.k_span(K, cfg.split_k, cfg.block_k)
        assert splits == cfg.split_k > 1 and K % 64  # several K ranges; a split-K dropping a partial split fails
        assert -(-workload.axes["N"] // cfg.block_n) > 1  # several column blocks
    assert any(w.axes["K"] % cfg.block_k for w in smoke)  # a last range ending inside a K step
    assert any(w.axes["M"] % cfg.block_m for w in smoke) and any(w.axes["N"] % cfg.block_n for w in smoke)
