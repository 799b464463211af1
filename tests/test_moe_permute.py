"""moe_permute: the reference's semantics, the routing the inputs imitate, the expert's and the naive
solution's results in process, and the configurations. The harness's runs are in tests/test_task_suite.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("moe_permute")
reference = import_file(TASK.file("reference.py"), "_test_moe_permute_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_moe_permute_inputs")
expert = import_file(TASK.file("expert.py"), "_test_moe_permute_expert")
naive = import_file(REPO / "tests" / "solutions" / "moe_permute_naive.py", "_test_moe_permute_naive")


def test_the_permutation_is_stable_by_expert_and_combined_sums_the_weighted_slots() -> None:
    """Worked by hand: T 3, K 2, E 3; slots s = 2 t + j."""
    ids = torch.tensor([[2, 0], [0, 1], [2, 1]], dtype=torch.int32)  # slots 0..5 -> experts 2 0 0 1 2 1
    hidden = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.bfloat16)
    weights = torch.tensor([[0.75, 0.25], [0.5, 0.5], [1.0, 0.0]], dtype=torch.float32)
    expert_out = torch.tensor([[10.0], [20.0], [30.0], [40.0], [50.0], [60.0]], dtype=torch.bfloat16)
    permuted, offsets, combined = reference.exact(hidden, ids, weights, expert_out, 3)
    # order: expert 0 -> slots 1, 2; expert 1 -> slots 3, 5; expert 2 -> slots 0, 4
    assert permuted.flatten().tolist() == [1.0, 2.0, 2.0, 3.0, 1.0, 3.0]
    assert offsets.tolist() == [0, 2, 4, 6]
    # slot 0 (t 0, w .75) sits at position 4 (50), slot 1 (w .25) at 0 (10): 0.75 * 50 + 0.25 * 10 = 40
    assert combined.flatten().tolist() == [40.0, 0.5 * 20 + 0.5 * 30, 1.0 * 60 + 0.0 * 40]
    ref = reference.reference(hidden, ids, weights, expert_out, 3)
    assert torch.equal(ref[0], permuted) and torch.equal(ref[1], offsets) and ref[2].flatten().tolist() == [40.0, 25.0, 60.0]


def test_inputs_route_like_a_trained_router() -> None:
    wl = {"T": 2048, "K": 8, "E": 128, "H": 64}
    a, b = inputs.make_inputs(wl, seed=5, device="cpu"), inputs.make_inputs(wl, seed=5, device="cpu")
    assert all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)
    ids, w = a["topk_ids"], a["topk_weights"]
    assert ids.dtype == torch.int32 and int(ids.min()) >= 0 and int(ids.max()) < 128
    assert all(len(set(row.tolist())) == 8 for row in ids)  # distinct experts per token
    assert torch.allclose(w.sum(dim=1), torch.ones(2048)) and float(w.min()) > 0
    load = torch.bincount(ids.flatten(), minlength=128).float()
    assert float(load.max() / load.mean()) > 2 and float(load.min() / load.mean()) < 0.5  # uneven expert loads
    assert a["num_experts"] == 128 and a["expert_out"].shape == (2048 * 8, 64)


@pytest.mark.slow  # kernels under the interpreter, in process (2-7 s on a 2-core CPU)
@pytest.mark.parametrize(("T", "K", "E", "H"), [(1, 1, 1, 8), (37, 2, 5, 40), (64, 4, 8, 96), (24, 8, 64, 48), (9, 3, 200, 33)])
def test_expert_and_naive_match_exact_in_process(T: int, K: int, E: int, H: int, interpreter_fixed: None) -> None:
    made = inputs.make_inputs({"T": T, "K": K, "E": E, "H": H}, seed=T + E, device="cpu")
    permuted, offsets, combined = reference.exact(**made)
    for solution in (expert, naive):
        out = solution.run(**made)
        assert torch.equal(out[0], permuted) and torch.equal(out[1], offsets), solution.__name__
        rel = float((out[2].double() - combined).norm() / combined.norm())
        assert out[2].dtype == torch.bfloat16 and rel < 3e-3, (solution.__name__, rel)


def test_configs_keep_the_one_hot_matrix_in_budget_and_exercise_the_smoke_shapes() -> None:
    cuda = torch.device("cuda")
    for workload in TASK.spec.workloads:
        T, K, E, H = (workload.axes[a] for a in "TKEH")
        cfg = expert.config_for(T * K, E, H, cuda)
        e_pad = 1 << (E - 1).bit_length()
        assert cfg.block * e_pad <= expert.ONEHOT_ELEMENTS and 16 <= cfg.block <= expert.MAX_BLOCK and cfg.block_h == 1024
        assert -(-T * K // cfg.block) >= 132  # the counting kernels fill the SMs
    cpu = expert.config_for(1, 1, 1, torch.device("cpu"))
    for workload in TASK.spec.smoke_workloads:
        T, K, H = workload.axes["T"], workload.axes["K"], workload.axes["H"]
        assert cpu.block < T * K and cpu.block_h < H  # several blocks and several column chunks
