"""moe_grouped_gemm_bwd: the reference's semantics, the routing and scales the inputs make, the expert's and the
naive solution's results in process, and the configurations. The harness's runs are in tests/test_task_suite.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("moe_grouped_gemm_bwd")
reference = import_file(TASK.file("reference.py"), "_test_moe_grouped_gemm_bwd_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_moe_grouped_gemm_bwd_inputs")
expert = import_file(TASK.file("expert.py"), "_test_moe_grouped_gemm_bwd_expert")
naive = import_file(REPO / "tests" / "solutions" / "moe_grouped_gemm_bwd_naive.py", "_test_moe_grouped_gemm_bwd_naive")


def test_gradients_by_hand_with_an_empty_expert() -> None:
    """T 2, K 2, E 3 (expert 1 without rows), H 2, I 1. Slots: token 0 -> experts 0, 2; token 1 -> experts 2, 0.
    Sorted by expert: rows 0, 1 = slots 0, 3 (expert 0); rows 2, 3 = slots 1, 2 (expert 2)."""
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.bfloat16)
    w = torch.tensor([[[1.0, 0.0]], [[5.0, 5.0]], [[0.0, 2.0]]], dtype=torch.bfloat16)  # [E, I, H]
    dy = torch.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=torch.bfloat16)
    slots = torch.tensor([0, 3, 1, 2], dtype=torch.int32)
    offsets = torch.tensor([0, 2, 2, 4], dtype=torch.int32)
    dx, dw = reference.exact(x, dy, w, slots, offsets)
    # token 0: row 0 (dy 1, expert 0) + row 2 (dy 3, expert 2) = [1, 0] + [0, 6]; token 1: row 1 (2, e0) + row 3 (4, e2)
    assert dx.tolist() == [[1.0, 6.0], [2.0, 8.0]]
    # expert 0: 1 * x[0] + 2 * x[1]; expert 1: zero; expert 2: 3 * x[0] + 4 * x[1]
    assert dw.tolist() == [[[7.0, 10.0]], [[0.0, 0.0]], [[15.0, 22.0]]]
    rdx, rdw = reference.reference(x, dy, w, slots, offsets)
    assert rdx.double().tolist() == dx.tolist() and rdw.double().tolist() == dw.tolist()


def test_inputs_route_like_a_trained_router_with_one_empty_expert() -> None:
    wl = {"T": 256, "K": 4, "E": 16, "H": 64, "I": 32}
    a, b = inputs.make_inputs(wl, seed=5, device="cpu"), inputs.make_inputs(wl, seed=5, device="cpu")
    assert all(torch.equal(a[k], b[k]) for k in a)
    offsets, slots = a["offsets"], a["sorted_slots"].long()
    sizes = offsets[1:] - offsets[:-1]
    assert offsets[0] == 0 and offsets[-1] == 1024 and bool((sizes >= 0).all())
    assert int((sizes == 0).sum()) >= 1 and int(sizes.max()) >= 2 * 1024 // 16  # an empty expert, a popular one
    assert sorted(slots.tolist()) == list(range(1024))  # a permutation of the slots
    tokens = (slots // 4).view(-1)
    for e in range(16):  # each expert's rows are distinct tokens, in slot order (a stable sort)
        mine = slots[offsets[e] : offsets[e + 1]]
        assert bool((mine[1:] > mine[:-1]).all()) and len(set(tokens[offsets[e] : offsets[e + 1]].tolist())) == len(mine)
    dx, dw = reference.exact(**a)
    assert float(dx.norm(dim=1).min()) > 0  # every token's gradient depends on its rows
    nonempty = sizes > 0
    assert bool((dw.flatten(1).norm(dim=1) > 0).eq(nonempty).all())
    assert 1e-5 < float(a["dy"].float().abs().mean()) < 1e-3  # a gradient's scale


@pytest.mark.parametrize(
    "axes",
    [
        {"T": 20, "K": 2, "E": 5, "H": 48, "I": 32},
        {"T": 9, "K": 3, "E": 7, "H": 40, "I": 24},
    ],
)
@pytest.mark.slow  # kernels under the interpreter, in process (1-3 s on a 2-core CPU)
def test_expert_and_naive_match_exact(axes: dict[str, int], interpreter_fixed: None) -> None:
    made = inputs.make_inputs(axes, seed=sum(axes.values()), device="cpu")
    want = reference.per_token(dict(zip(("dx", "dw"), reference.exact(**made), strict=True)), made)
    bound = TASK.spec.tolerance.matrix_rel_fro or 0.0
    for solution in (expert, naive):
        dx, dw = solution.run(**made)
        assert dx.dtype == dw.dtype == torch.bfloat16 and dx.is_contiguous() and dw.is_contiguous()
        got = reference.per_token({"dx": dx, "dw": dw}, made)
        for name in ("dx", "dw"):
            diff = (got[name].double() - want[name]).flatten(1).norm(dim=1)
            scale = want[name].flatten(1).norm(dim=1)
            rel = torch.where(scale > 0, diff / scale.clamp_min(1e-300), diff)
            assert float(rel.max()) < 0.5 * bound, (solution.__name__, name)
        empty = (made["offsets"][1:] == made["offsets"][:-1]).nonzero().flatten()
        assert float(dw[empty].abs().max()) == 0.0  # exactly zero for an expert without rows


def test_registered_shapes_have_configs_and_the_floors_are_compute() -> None:
    cuda = torch.device("cuda")
    for workload in TASK.spec.workloads:
        axes = workload.axes
        key = tuple(axes[k] for k in ("T", "K", "E", "H", "I"))
        assert key in expert.H200_CONFIGS
        cfg = expert.config_for(*key, cuda)
        assert cfg.block_m * cfg.block_h <= 128 * 256 and cfg.block_i * cfg.block_h <= 128 * 256
        assert axes["K"] < axes["E"]
        flops, moved = TASK.min_flops(workload), TASK.bytes_moved(workload)
        assert flops == 4 * axes["T"] * axes["K"] * axes["I"] * axes["H"]
        assert flops / 989e12 > moved / 4.8e12  # compute-bound: the FLOP floor is the larger
    assert expert.config_for(20, 2, 5, 48, 32, torch.device("cpu")) == expert.INTERPRETER
