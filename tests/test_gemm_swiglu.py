"""gemm_swiglu: the reference, the inputs, the expert's and the naive solution's results in process, and the
configurations. The harness's runs (smoke workloads) are in tests/test_task_suite.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("gemm_swiglu")
reference = import_file(TASK.file("reference.py"), "_test_gemm_swiglu_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_gemm_swiglu_inputs")
expert = import_file(TASK.file("expert.py"), "_test_gemm_swiglu_expert")
naive = import_file(REPO / "tests" / "solutions" / "gemm_swiglu_naive.py", "_test_gemm_swiglu_naive")


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_exact_is_silu_of_the_gate_times_the_up_projection() -> None:
    x = torch.tensor([[1.0, 2.0]], dtype=torch.bfloat16)
    w = torch.tensor([[1.0, 0.0], [0.0, -1.0], [0.5, 0.0], [0.0, 1.0]], dtype=torch.bfloat16)  # I = 2
    g = torch.tensor([1.0, -2.0], dtype=torch.float64)
    u = torch.tensor([0.5, 2.0], dtype=torch.float64)
    assert torch.allclose(reference.exact(x, w), (g * torch.sigmoid(g) * u)[None])


def test_reference_is_bf16_and_close_to_exact() -> None:
    d = inputs.make_inputs({"M": 48, "K": 512, "I": 80}, seed=3, device="cpu")
    y = reference.reference(**d)
    assert y.dtype == torch.bfloat16 and y.shape == (48, 80) and y.is_contiguous()
    assert 1e-3 < rel(y, reference.exact(**d)) < 5e-3  # four bfloat16 roundings


def test_inputs_are_deterministic_realistic_and_every_input_moves_the_output() -> None:
    wl = {"M": 64, "K": 1024, "I": 96}
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert a["x"].shape == (64, 1024) and a["w"].shape == (192, 1024)
    assert a["x"].dtype == a["w"].dtype == torch.bfloat16
    assert 0.01 < float(a["w"].float().std()) < 0.04  # Llama-like weights
    assert float(a["x"].float().abs().amax(dim=0).max()) > 16  # outlier channels
    g = a["x"].double() @ a["w"][:96].double().T
    assert 0.4 < float(g.std()) < 1.5 and float((g < 0).double().mean()) > 0.3  # both sides of silu
    base = reference.exact(**a)
    assert float(base.std()) > 0.05 and len(torch.unique(base)) > 1000
    for name in a:  # every input moves y
        changed = dict(a)
        changed[name] = (a[name].float() * 1.5).to(torch.bfloat16)
        assert rel(reference.exact(**changed), base) > 0.1, name
    other = inputs.make_inputs(wl, seed=8, device="cpu")
    assert rel(reference.exact(**other), base) > 0.5  # the seed decides the values


@pytest.mark.slow  # kernels under the interpreter, in process (2-7 s on a 2-core CPU)
@pytest.mark.parametrize(("M", "K", "I"), [(1, 64, 32), (37, 80, 40), (64, 128, 96), (100, 96, 72)])
def test_expert_and_naive_match_exact_in_process(M: int, K: int, I: int, interpreter_fixed: None) -> None:  # noqa: E741
    d = inputs.make_inputs({"M": M, "K": K, "I": I}, seed=M + K, device="cpu")
    oracle = reference.exact(**d)
    tol = TASK.spec.tolerance
    assert tol.matrix_rel_fro is not None
    for solution in (expert, naive):
        out = solution.run(**d)
        assert out.dtype == torch.bfloat16 and out.shape == (M, I) and out.is_contiguous()
        result = compare(out, oracle, tol)
        assert result.ok and result.rel_err < 0.6 * tol.matrix_rel_fro, (solution.__name__, result.message)


def test_the_grouped_order_visits_every_tile_once() -> None:
    """_tile_coords's arithmetic, in Python: a bijection from tile numbers to (row block, column block),
    including a ragged last group."""
    for num_m, num_n, group in ((5, 3, 2), (8, 7, 8), (3, 4, 8), (1, 1, 8)):
        seen = []
        for tile in range(num_m * num_n):
            per_group = group * num_n
            first = (tile // per_group) * group
            rows = min(num_m - first, group)
            within = tile % per_group
            seen.append((first + within % rows, within // rows))
        assert sorted(seen) == [(m, n) for m in range(num_m) for n in range(num_n)]


def test_registered_shapes_have_configs_that_fill_the_h200() -> None:
    cuda = torch.device("cuda")
    for workload in TASK.spec.workloads:
        M, K, inter = workload.axes["M"], workload.axes["K"], workload.axes["I"]
        cfg = expert.config_for(M, K, inter, cuda)
        assert (M, K, inter) in expert.H200_CONFIGS
        tiles = -(-M // cfg.block_m) * -(-inter // cfg.block_n)
        assert tiles >= 4 * 132  # at least four tiles per SM for the persistent programs
        assert cfg.num_stages >= 3 and cfg.block_k * cfg.num_stages <= 256


def test_smoke_configs_exercise_persistence_and_ragged_edges() -> None:
    cfg = expert.config_for(1, 1, 1, torch.device("cpu"))
    for workload in TASK.spec.smoke_workloads:
        tiles = -(-workload.axes["M"] // cfg.block_m) * -(-workload.axes["I"] // cfg.block_n)
        assert tiles > expert.INTERPRET_SMS  # some program takes two tiles
    ragged = [w for w in TASK.spec.smoke_workloads if w.axes["M"] % cfg.block_m and w.axes["K"] % cfg.block_k]
    assert ragged and any(w.axes["I"] % cfg.block_n for w in ragged)
