"""The causal_attention_fwd task: the oracle checked by PyTorch's own attention, inputs, the expert and the naive solution."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("causal_attention_fwd")
reference = import_file(TASK.file("reference.py"), "_test_caf_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_caf_inputs")
expert = import_file(TASK.file("expert.py"), "_test_caf_expert")
NAIVE = REPO / "tests" / "solutions" / "causal_attention_fwd_naive.py"
naive = import_file(NAIVE, "_test_caf_naive")


@pytest.fixture
def exact_bf16_dot() -> Iterator[None]:
    """The harness's interpreter fix (bfloat16 tl.dot operands widened exactly), as in its solution process."""
    from workbench.harness.solution import interpreter_fix

    uninstall = interpreter_fix.install()
    yield
    uninstall()


def axes(B: int, Hq: int, Hkv: int, S: int, D: int) -> dict[str, int]:
    return {"B": B, "Hq": Hq, "Hkv": Hkv, "S": S, "D": D}


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """The worst per-(batch, head) relative Frobenius error, as the checker measures it."""
    d = (a.double() - b.double()).flatten(2).norm(dim=2)
    return float((d / b.double().flatten(2).norm(dim=2)).max())


@pytest.mark.parametrize("shape", [axes(1, 2, 2, 40, 16), axes(2, 6, 2, 33, 32), axes(1, 4, 1, 17, 16)])
def test_exact_matches_torch_sdpa_in_float64(shape: dict[str, int]) -> None:
    d = inputs.make_inputs(shape, seed=shape["S"], device="cpu")
    group = shape["Hq"] // shape["Hkv"]
    k = d["k"].double().repeat_interleave(group, dim=1)  # query head h -> key/value head h // group
    v = d["v"].double().repeat_interleave(group, dim=1)
    sdpa = torch.nn.functional.scaled_dot_product_attention(d["q"].double(), k, v, is_causal=True, scale=d["scale"])
    assert rel(reference.exact(**d), sdpa) < 1e-12


def test_reference_chunks_and_exact_chunks_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    d = inputs.make_inputs(axes(2, 4, 2, 48, 32), seed=4, device="cpu")
    whole, oracle = reference.reference(**d), reference.exact(**d)
    assert whole.dtype == torch.bfloat16 and whole.shape == (2, 4, 48, 32) and whole.is_contiguous()
    assert 1e-3 < rel(whole, oracle) < 4e-3  # bfloat16 probabilities and output
    monkeypatch.setattr(reference, "REFERENCE_CHUNK_ELEMS", 3 * 48 * 48)  # 3 heads per chunk, a ragged last one
    monkeypatch.setattr(reference, "EXACT_CHUNK_ELEMS", 48 * 48)  # one head per chunk
    assert torch.equal(reference.reference(**d), whole)
    assert torch.equal(reference.exact(**d), oracle)


def test_inputs_are_deterministic_realistic_and_every_input_matters() -> None:
    shape = axes(1, 4, 2, 96, 32)
    a, b = inputs.make_inputs(shape, seed=7, device="cpu"), inputs.make_inputs(shape, seed=7, device="cpu")
    assert all(torch.equal(a[n], b[n]) for n in ("q", "k", "v")) and a["scale"] == b["scale"] == 1 / math.sqrt(32)
    assert (a["q"].shape, a["k"].shape, a["v"].shape) == ((1, 4, 96, 32), (1, 2, 96, 32), (1, 2, 96, 32))
    assert all(a[n].dtype == torch.bfloat16 and a[n].is_contiguous() for n in ("q", "k", "v"))
    assert 0.5 < float(a["v"].float().std()) < 2 and abs(float(a["v"].float().mean())) < 0.1
    base = reference.exact(**a)
    for name in ("q", "k", "v"):  # every input moves the output
        changed = dict(a)
        changed[name] = (a[name].float() * 1.5).to(torch.bfloat16)
        assert rel(reference.exact(**changed), base) > 1e-2, name
    # the causal mask and the GQA head map both matter far beyond the tolerance
    q, k, v = a["q"].double(), a["k"].double(), a["v"].double()
    full = torch.softmax(q @ k.repeat_interleave(2, 1).transpose(-2, -1) * a["scale"], -1) @ v.repeat_interleave(2, 1)
    assert rel(full, base) > 0.2
    kv = torch.tensor([0, 1, 0, 1])  # query head h on key/value head h % Hkv instead of h // 2
    hidden = torch.ones((96, 96), dtype=torch.bool).triu(1)
    s = (q @ k[:, kv].transpose(-2, -1) * a["scale"]).masked_fill(hidden, float("-inf"))
    assert rel(torch.softmax(s, -1) @ v[:, kv], base) > 0.2


def test_raw_scores_overflow_exp_only_on_the_scaled_call() -> None:
    # fresh scores stay far below exp's float32 overflow (88.7); x4 inputs (scores x16) pass it on every seed
    factor = TASK.spec.checks.input_scale**2
    for seed in range(4):
        d = inputs.make_inputs(axes(1, 2, 2, 64, 32), seed=seed, device="cpu")
        s = (d["q"].float() @ d["k"].float().transpose(-2, -1) * d["scale"]).tril()
        assert 88.7 / factor < float(s.max()) < 60


@pytest.mark.parametrize("shape", [axes(1, 2, 2, 64, 32), axes(2, 4, 2, 80, 32), axes(1, 8, 2, 37, 16)])
def test_expert_and_naive_match_exact_in_process(shape: dict[str, int], exact_bf16_dot: None) -> None:
    d = inputs.make_inputs(shape, seed=1, device="cpu")
    oracle = reference.exact(**d)
    tol = TASK.spec.tolerance
    assert tol.matrix_rel_fro is not None
    for solution in (expert, naive):
        out = solution.run(**d)
        assert out.dtype == torch.bfloat16 and out.shape == d["q"].shape and out.is_contiguous()
        result = compare(out, oracle, tol)
        assert result.ok and result.rel_err < 0.6 * tol.matrix_rel_fro, (solution.__name__, result.message)


def test_configs_cover_the_registered_workloads() -> None:
    for workload in TASK.spec.workloads:
        S, D = workload.axes["S"], workload.axes["D"]
        assert (S, D) in expert.H200_CONFIGS
        cfg = expert.config_for(S, D, interpret=False)
        assert cfg.block_m % cfg.block_n == 0 and S % cfg.block_m == 0
    small = expert.config_for(80, 32, interpret=True)
    assert small.block_m % small.block_n == 0 and small.block_m // small.block_n >= 2


def test_roofline_counts_the_causal_half() -> None:
    for workload in TASK.spec.workloads:
        a = workload.axes
        assert TASK.min_flops(workload) * 2 == TASK.flops(workload)
        assert TASK.bytes_moved(workload) == 2 * a["B"] * a["S"] * a["D"] * (2 * a["Hq"] + 2 * a["Hkv"])
        assert (TASK.reference_bytes(workload) or 0) > 100 * TASK.bytes_moved(workload)
