"""multi_lora: the reference's semantics, the mixed batches the inputs make, the expert's and the naive
solution's results in process, and the configurations. The harness's runs are in tests/test_task_suite.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("multi_lora")
reference = import_file(TASK.file("reference.py"), "_test_multi_lora_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_multi_lora_inputs")
expert = import_file(TASK.file("expert.py"), "_test_multi_lora_expert")
naive = import_file(REPO / "tests" / "solutions" / "multi_lora_naive.py", "_test_multi_lora_naive")


def test_each_token_gets_its_requests_adapter_per_slice() -> None:
    """By hand: T 3 in requests [0, 2) (adapter 1) and [2, 3) (none); S 2, A 2, R 1, H 1, N 1."""
    x = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.bfloat16)
    lora_a = torch.tensor([[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]], dtype=torch.bfloat16)  # [S, A, R, H]
    lora_b = torch.tensor([[[[1.0]], [[0.5]]], [[[1.0]], [[0.25]]]], dtype=torch.bfloat16)  # [S, A, N, R]
    base = torch.tensor([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]], dtype=torch.bfloat16)
    starts, adapters = torch.tensor([0, 2, 3], dtype=torch.int32), torch.tensor([1, -1], dtype=torch.int32)
    y = reference.exact(x, lora_a, lora_b, base, starts, adapters, 2.0)
    # slice 0, adapter 1: 0.5 * (2 * x) = x; slice 1: 0.25 * (4 * x) = x; times scaling 2
    assert y.tolist() == [[12.0, 22.0], [34.0, 44.0], [50.0, 60.0]]
    assert reference.reference(x, lora_a, lora_b, base, starts, adapters, 2.0).double().tolist() == y.tolist()


def test_inputs_make_mixed_batches_whose_adapters_matter() -> None:
    wl = {"T": 64, "H": 128, "S": 2, "A": 4, "R": 16, "N": 32, "NSEG": 8}
    a, b = inputs.make_inputs(wl, seed=3, device="cpu"), inputs.make_inputs(wl, seed=3, device="cpu")
    assert all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)
    starts = a["seg_starts"]
    assert starts[0] == 0 and starts[-1] == 64 and bool((starts[1:] > starts[:-1]).all())
    assert -1 in a["seg_adapters"].tolist() and len(set(a["seg_adapters"].tolist())) >= 3
    base = a["base"].double()
    delta = reference.exact(**a) - base
    used = reference.token_adapters(a["seg_starts"], a["seg_adapters"]) >= 0
    ratio = delta[used].norm(dim=1) / base[used].norm(dim=1)
    assert float(ratio.min()) > 0.15 and float(ratio.max()) < 3  # every adapter's delta is a sizeable part of y
    assert float(delta[~used].abs().max()) == 0.0
    decode = inputs.make_inputs({**wl, "NSEG": 64}, seed=4, device="cpu")
    assert decode["seg_starts"].tolist() == list(range(65))  # one token per request


@pytest.mark.parametrize(
    "axes",
    [
        {"T": 1, "H": 16, "S": 1, "A": 1, "R": 16, "N": 16, "NSEG": 1},
        {"T": 40, "H": 64, "S": 1, "A": 3, "R": 16, "N": 48, "NSEG": 5},
        {"T": 24, "H": 32, "S": 3, "A": 2, "R": 16, "N": 32, "NSEG": 24},
        {"T": 70, "H": 96, "S": 2, "A": 4, "R": 32, "N": 40, "NSEG": 6},
    ],
)
@pytest.mark.slow  # kernels under the interpreter, in process (2-7 s on a 2-core CPU)
def test_expert_and_naive_match_exact_token_by_token(axes: dict[str, int], interpreter_fixed: None) -> None:
    made = inputs.make_inputs(axes, seed=sum(axes.values()), device="cpu")
    want = reference.exact(**made)
    for solution in (expert, naive):
        y = solution.run(**made)
        assert y.dtype == torch.bfloat16 and y.shape == want.shape and y.is_contiguous()
        rows = (y.double() - want).norm(dim=1) / want.norm(dim=1)
        assert float(rows.max()) < 0.5 * (TASK.spec.tolerance.matrix_rel_fro or 0.0), solution.__name__


def test_registered_shapes_have_configs() -> None:
    cuda = torch.device("cuda")
    for workload in TASK.spec.workloads:
        axes = workload.axes
        key = tuple(axes[k] for k in ("T", "H", "S", "A", "R", "N", "NSEG"))
        assert key in expert.H200_CONFIGS
        cfg = expert.config_for(*key, cuda)
        decode = axes["NSEG"] == axes["T"]
        # one-token requests get the smallest MMA tile and a split K; prefill tiles stay within a request (32-64)
        assert (cfg.block_m == 16 and cfg.split_k > 1) if decode else cfg.block_m in (32, 64)
        assert axes["R"] % 16 == 0 and cfg.block_n * cfg.block_m <= 128 * 64
