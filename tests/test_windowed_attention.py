"""The windowed_attention task: the mask and oracle, the inputs, the pair-count formula, the expert's
block lists, and the expert and naive solutions against the oracle."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution import interpreter_fix

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("windowed_attention")
reference = import_file(TASK.file("reference.py"), "_test_windowed_attention_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_windowed_attention_inputs")
expert = import_file(TASK.file("expert.py"), "_test_windowed_attention_expert")
NAIVE = REPO / "tests" / "solutions" / "windowed_attention_naive.py"
naive = import_file(NAIVE, "_test_windowed_attention_naive")


@pytest.fixture
def interpreter() -> Iterator[None]:
    """Triton kernels on the CPU as the harness's solution process runs them (bf16 dot widened)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs TRITON_INTERPRET=1 (set by tests/conftest.py)")
    uninstall = interpreter_fix.install()
    try:
        yield
    finally:
        uninstall()


def dense_float64(d: dict[str, object]) -> torch.Tensor:
    """The attention from the dense mask in float64 (small shapes only)."""
    q, k, v, cu = (d[n] for n in ("q", "k", "v", "cu_seqlens"))
    assert isinstance(q, torch.Tensor) and isinstance(k, torch.Tensor) and isinstance(v, torch.Tensor)
    assert isinstance(cu, torch.Tensor)
    B, H, S, D = q.shape
    out = torch.empty((B, H, S, D), dtype=torch.float64)
    for b in range(B):
        mask = reference.allowed_mask(cu[b], S, int(d["window"]))  # type: ignore[call-overload]
        s = q[b].double() @ k[b].double().transpose(-1, -2) / math.sqrt(D)
        out[b] = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v[b].double()
    return out


def row_errors(out: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    diff = (out.double() - exact.double()).norm(dim=-1)
    errs: torch.Tensor = diff / exact.double().norm(dim=-1)
    return errs


def test_mask_follows_the_rule() -> None:
    cu = torch.tensor([0, 3, 10], dtype=torch.int32)
    mask = reference.allowed_mask(cu, 10, 4)
    for i in range(10):
        for j in range(10):
            same_doc = (i < 3) == (j < 3)
            assert bool(mask[i, j]) == (same_doc and i - 4 < j <= i), (i, j)


@pytest.mark.parametrize(
    "axes",
    [
        {"B": 2, "H": 2, "S": 96, "D": 32, "W": 20, "NDOC": 1},
        {"B": 2, "H": 3, "S": 144, "D": 16, "W": 64, "NDOC": 3},
        {"B": 1, "H": 2, "S": 64, "D": 16, "W": 64, "NDOC": 4},
    ],
)
def test_exact_and_reference_match_the_dense_float64_attention(axes: dict[str, int]) -> None:
    d = inputs.make_inputs(axes, seed=5, device="cpu")
    dense = dense_float64(d)
    assert float((reference.exact(**d) - dense).abs().max()) < 1e-12
    ref = reference.reference(**d)
    assert ref.dtype == torch.bfloat16 and ref.shape == dense.shape and ref.is_contiguous()
    errs = row_errors(ref, dense)
    assert 5e-4 < float(errs.mean()) < 4e-3 and float(errs.max()) < 8e-3  # bfloat16 probabilities and output


def test_reference_loops_over_head_groups_that_fit_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    d = inputs.make_inputs({"B": 1, "H": 4, "S": 64, "D": 16, "W": 20, "NDOC": 1}, seed=2, device="cpu")
    whole = reference.reference(**d)
    monkeypatch.setattr(reference, "SCORE_BUDGET_BYTES", 4 * 64 * 64)  # one head at a time
    assert torch.equal(reference.reference(**d), whole)


def test_inputs_are_deterministic_realistic_and_documents_vary() -> None:
    axes = {"B": 2, "H": 4, "S": 256, "D": 64, "W": 256, "NDOC": 4}
    a, b = inputs.make_inputs(axes, seed=7, device="cpu"), inputs.make_inputs(axes, seed=7, device="cpu")
    assert all(torch.equal(a[n], b[n]) for n in ("q", "k", "v", "cu_seqlens")) and a["window"] == 256
    cu = a["cu_seqlens"]
    assert cu.dtype == torch.int32 and cu.shape == (2, 5)
    lengths = inputs.doc_lengths(256, 4)
    assert lengths == [16, 48, 80, 112] and sum(lengths) == 256
    for row in cu.tolist():  # a permutation of the fixed lengths, starting at 0 and ending at S
        assert row[0] == 0 and row[-1] == 256
        assert sorted(y - x for x, y in itertools.pairwise(row)) == lengths
    orders = {tuple(inputs.make_inputs(axes, seed=s, device="cpu")["cu_seqlens"][0].tolist()) for s in range(20)}
    assert len(orders) > 5  # the order is drawn per call
    q, k = a["q"].float(), a["k"].float()
    scores = q @ k.transpose(-1, -2) / 8.0
    spread = scores.std(dim=(-1, -2)).flatten()
    assert float(spread.min()) > 0.5 and float(spread.max()) < 4 and float(spread.max() / spread.min()) > 1.2
    # heavy keys: high-norm keys that most queries of the head score well above the rest
    norms = k.norm(dim=-1)
    heavy = norms > norms.median() * 1.4
    assert 0 < int(heavy.sum()) < norms.numel() // 32
    bonus = (scores * heavy[:, :, None, :]).sum(-1) / heavy.sum(-1, keepdim=True).clamp_min(1)
    assert float(bonus.mean() - scores.mean()) > 2.5


def test_pair_count_formula_is_exact() -> None:
    for workload in [*TASK.spec.workloads, *TASK.spec.smoke_workloads]:
        a = workload.axes
        pairs = TASK.min_flops(workload) / (4 * a["B"] * a["H"] * a["D"])
        lengths = inputs.doc_lengths(a["S"], a["NDOC"])
        W = a["W"]
        direct = sum(L * min(L, W) - min(L, W) * (min(L, W) - 1) // 2 for L in lengths)
        assert pairs == direct, workload.name
        if a["S"] <= 256:
            cu = inputs.make_inputs(a, seed=1, device="cpu")["cu_seqlens"]
            assert int(reference.allowed_mask(cu[0], a["S"], W).sum()) == direct
    registered = {w.name: TASK.min_flops(w) / (4 * w.axes["B"] * w.axes["H"] * w.axes["D"]) for w in TASK.spec.workloads}
    assert registered == {
        "b2_h32_s32768_d128_w4096": 32768 * 4096 - 4096 * 4095 / 2,
        "b4_h16_s8192_d128_w1024": 8192 * 1024 - 1024 * 1023 / 2,
        "b1_h32_s32768_d128_docs16": 44711936,
    }


def block_lists(cu: list[int], S: int, W: int, bm: int, bn: int) -> Iterator[tuple[int, int, int, int, int]]:
    """Python mirror of the expert's ``_first_keys`` and ``_block_range``: (q0, lo, f_lo, f_hi, end)."""

    def lb(i: int) -> int:
        start = max(c for c in cu[:-1] if c <= i)
        return max(start, i - W + 1)

    for q0 in range(0, S, bm):
        q_last = min(q0 + bm, S) - 1
        lo, end = lb(q0) // bn, q_last // bn + 1
        f_lo = min(max(-(-lb(q_last) // bn), lo), end)
        f_hi = min(max((q0 + 1) // bn, f_lo), end)
        yield q0, lo, f_lo, f_hi, end


@pytest.mark.parametrize(
    ("S", "W", "NDOC", "bm", "bn"),
    [(176, 72, 1, 32, 16), (144, 64, 3, 32, 16), (128, 128, 4, 32, 16), (8192, 1024, 1, 128, 64), (4096, 4096, 4, 128, 64)],
)
def test_block_lists_visit_exactly_the_needed_blocks(S: int, W: int, NDOC: int, bm: int, bn: int) -> None:
    cu = inputs.make_inputs({"B": 1, "H": 1, "S": S, "D": 16, "W": W, "NDOC": NDOC}, 3, "cpu")["cu_seqlens"][0]
    mask = reference.allowed_mask(cu, S, W)
    segments = {"partial": 0, "full": 0}
    for q0, lo, f_lo, f_hi, end in block_lists(cu.tolist(), S, W, bm, bn):
        rows = mask[q0 : q0 + bm]
        for blk in range(-(-S // bn)):
            tile = rows[:, blk * bn : (blk + 1) * bn]
            if not lo <= blk < end:
                assert not bool(tile.any()), (q0, blk)  # skipped blocks hold no attended pair
            elif f_lo <= blk < f_hi:
                assert bool(tile.all()) and tile.shape[1] == bn, (q0, blk)  # full: no mask needed (rows past S are not stored)
                segments["full"] += 1
            else:
                segments["partial"] += 1
    assert segments["full"] > 0 and segments["partial"] > 0


def test_expert_block_sizes_per_shape() -> None:
    gpu = torch.device("cuda")
    assert expert.config_for(128, gpu) == expert.Config(block_m=128, block_n=128, num_warps=8, num_stages=3)
    assert expert.config_for(64, torch.device("cpu")) == expert.INTERPRET_CONFIG


@pytest.mark.parametrize(
    "workload",
    [  # the two with two heads take 2-5 s each under the interpreter: slow
        pytest.param(w.name, marks=pytest.mark.slow) if w.name.startswith("smoke_b2_h2_") else w.name
        for w in TASK.spec.smoke_workloads
    ],
)
def test_expert_and_naive_match_exact_in_process(workload: str, interpreter: None) -> None:
    d = inputs.make_inputs(TASK.workload(workload).axes, seed=11, device="cpu")
    oracle = reference.rows({"o": reference.exact(**d)}, d)["o"]
    rule = TASK.tolerance_for(TASK.workload(workload))
    for solution in (expert, naive):
        out = solution.run(**d)
        assert out.dtype == torch.bfloat16 and out.shape == d["q"].shape and out.is_contiguous()
        result = compare(reference.rows({"o": out}, d)["o"], oracle, rule)
        assert rule.matrix_rel_fro is not None
        assert result.ok and result.rel_err < 0.75 * rule.matrix_rel_fro, (solution.__name__, result.message)
