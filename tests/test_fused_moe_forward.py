"""fused_moe_forward: the reference's semantics, the routing and scales the inputs make, the expert's and the
naive solution's results in process, and the configurations. The harness's runs are in tests/test_task_suite.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("fused_moe_forward")
reference = import_file(TASK.file("reference.py"), "_test_fused_moe_forward_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_fused_moe_forward_inputs")
expert = import_file(TASK.file("expert.py"), "_test_fused_moe_forward_expert")
naive = import_file(REPO / "tests" / "solutions" / "fused_moe_forward_naive.py", "_test_fused_moe_forward_naive")


def test_routing_swiglu_and_combine_by_hand() -> None:
    """T 2, E 3, K 2, H 1, I 1: token 0 goes to experts 1 (weight 3/4) and 0 (1/4), token 1 to 2 and 1 (1/2 each)."""
    hidden = torch.tensor([[1.0], [-2.0]], dtype=torch.bfloat16)
    logits = torch.tensor([[0.0, math.log(3.0), -5.0], [-4.0, 1.0, 1.0 + 2e-3]], dtype=torch.float32)
    gate, up, down = [0.5, 1.0, 2.0], [1.0, -1.0, 0.25], [2.0, 4.0, -1.0]
    w13 = torch.tensor([[[g], [u]] for g, u in zip(gate, up, strict=True)], dtype=torch.bfloat16)  # [E, 2 I, H]
    w2 = torch.tensor([[[d]] for d in down], dtype=torch.bfloat16)  # [E, H, I]

    def expert_out(e: int, x: float) -> float:
        g = gate[e] * x
        return down[e] * g / (1.0 + math.exp(-g)) * (up[e] * x)

    w_pair = 1.0 / (1.0 + math.exp(-2e-3))  # expert 2's weight against expert 1 in token 1
    want = [
        0.75 * expert_out(1, 1.0) + 0.25 * expert_out(0, 1.0),
        w_pair * expert_out(2, -2.0) + (1 - w_pair) * expert_out(1, -2.0),
    ]
    got = reference.exact(hidden, logits, w13, w2, 2)
    assert got.dtype == torch.float64 and got[:, 0].tolist() == pytest.approx(want, rel=1e-6)
    eager = reference.reference(hidden, logits, w13, w2, 2)
    assert eager.dtype == torch.bfloat16 and eager[:, 0].double().tolist() == pytest.approx(want, rel=1e-2)
    weights, ids = reference.route(logits, 2)
    assert ids.tolist() == [[1, 0], [2, 1]] and weights[0].tolist() == pytest.approx([0.75, 0.25])


def test_inputs_route_realistically_with_unambiguous_top_k() -> None:
    wl = {"T": 256, "E": 16, "K": 4, "H": 32, "I": 16}
    a, b = inputs.make_inputs(wl, seed=3, device="cpu"), inputs.make_inputs(wl, seed=3, device="cpu")
    assert all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)
    assert a["top_k"] == 4 and a["router_logits"].dtype == torch.float32
    ranked = a["router_logits"].sort(dim=-1).values
    assert float((ranked[:, 1:] - ranked[:, :-1]).min()) >= 0.99 * inputs.GAP  # no near-ties anywhere
    rms = a["hidden"].double().pow(2).mean().sqrt()
    assert 0.8 < float(rms) < 1.5  # RMSNorm'd scale
    weights, ids = reference.route(a["router_logits"], 4)
    counts = torch.bincount(ids.flatten(), minlength=16)
    assert int(counts.min()) > 0 and int(counts.max()) > 2.5 * int(counts.min())  # imbalanced, every expert used
    out = reference.exact(**a)
    assert float(out.std()) > 0.1 and float(out.norm(dim=1).min()) > 0  # no zero or constant rows
    # every chosen expert matters: dropping a token's last choice moves its row by a sizeable fraction
    last = weights[:, -1].double()
    assert float(last.min()) > 0.005 and float(last.max()) < 0.25 + 1e-6
    decode = inputs.make_inputs({"T": 4, "E": 16, "K": 2, "H": 32, "I": 16}, seed=5, device="cpu")
    assert len(torch.unique(reference.route(decode["router_logits"], 2)[1])) <= 8  # experts without a token


def test_the_byte_floor_counts_fewer_experts_than_the_decode_routing_reaches() -> None:
    """bytes counts min(E, T K / 4) experts' weights: at T 32, E 128, K 8 the routing reaches more on every seed."""
    for seed in range(20):
        made = inputs.make_inputs({"T": 32, "E": 128, "K": 8, "H": 16, "I": 16}, seed=seed, device="cpu")
        assert len(torch.unique(reference.route(made["router_logits"], 8)[1])) > 32 * 8 // 4


@pytest.mark.parametrize(
    "axes",
    [
        {"T": 1, "E": 4, "K": 1, "H": 16, "I": 16},
        {"T": 4, "E": 16, "K": 2, "H": 32, "I": 16},
        {"T": 12, "E": 5, "K": 3, "H": 48, "I": 40},
    ],
)
@pytest.mark.slow  # kernels under the interpreter, in process (1-3 s on a 2-core CPU)
def test_expert_and_naive_match_exact_token_by_token(axes: dict[str, int], interpreter_fixed: None) -> None:
    made = inputs.make_inputs(axes, seed=sum(axes.values()), device="cpu")
    want = reference.exact(**made)
    for solution in (expert, naive):
        out = solution.run(**made)
        assert out.dtype == torch.bfloat16 and out.shape == want.shape and out.is_contiguous()
        rows = (out.double() - want).norm(dim=1) / want.norm(dim=1)
        assert float(rows.max()) < 0.5 * (TASK.spec.tolerance.matrix_rel_fro or 0.0), solution.__name__


def test_registered_shapes_have_configs() -> None:
    cuda = torch.device("cuda")
    for workload in TASK.spec.workloads:
        axes = workload.axes
        key = tuple(axes[k] for k in ("T", "E", "K", "H", "I"))
        assert key in expert.H200_CONFIGS
        cfg = expert.config_for(*key, cuda)
        rows_per_expert = axes["T"] * axes["K"] // axes["E"]
        assert cfg.block_m == 16 if rows_per_expert < 16 else cfg.block_m >= 64
        assert cfg.block_k >= 32 and cfg.block_n >= 32 and cfg.num_stages >= 2
    assert expert.config_for(40, 8, 2, 64, 48, torch.device("cpu")).block_m == 16
