"""The causal_attention_bwd task: the oracle against autograd, inputs, the expert and the naive solution."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("causal_attention_bwd")
reference = import_file(TASK.file("reference.py"), "_test_causal_attention_bwd_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_causal_attention_bwd_inputs")
expert = import_file(TASK.file("expert.py"), "_test_causal_attention_bwd_expert")
NAIVE = REPO / "tests" / "solutions" / "causal_attention_bwd_naive.py"
naive = import_file(NAIVE, "_test_causal_attention_bwd_naive")
NAMES = ("dq", "dk", "dv")


@pytest.fixture
def exact_bf16_dot() -> Iterator[None]:
    """The harness's interpreter fix (bfloat16 tl.dot operands widened exactly), as in its solution process."""
    from workbench.harness.solution import interpreter_fix

    uninstall = interpreter_fix.install()
    yield
    uninstall()


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """The worst (batch, head) relative Frobenius error, as the harness measures it."""
    diff = (a.double() - b.double()).flatten(0, 1).norm(dim=(1, 2))
    return float((diff / b.double().flatten(0, 1).norm(dim=(1, 2))).max())


def autograd_float64(d: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """dq, dk, dv by differentiating the float64 causal attention forward of q, k, v."""
    q, k, v = (d[n].double().requires_grad_(True) for n in "qkv")
    S = q.shape[2]
    s = (q @ k.transpose(-2, -1)) * d["scale"]
    s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(s, dim=-1) @ v
    return torch.autograd.grad(out, (q, k, v), d["do"].double())


def from_saved_float64(d: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """The fused kernels' formulas in float64, from the given o and lse: p = exp(s - lse), delta = rowsum(do o)."""
    q, k, v, o, do = (d[n].double() for n in ("q", "k", "v", "o", "do"))
    S = q.shape[2]
    s = (q @ k.transpose(-2, -1)) * d["scale"]
    p = torch.exp(s - d["lse"].double().unsqueeze(-1)).masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), 0.0)
    delta = (do * o).sum(dim=-1, keepdim=True)
    ds = p * (do @ v.transpose(-2, -1) - delta)
    scale = float(d["scale"])
    return scale * ds @ k, scale * ds.transpose(-2, -1) @ q, p.transpose(-2, -1) @ do


@pytest.mark.parametrize(("B", "H", "S", "D"), [(1, 2, 16, 8), (2, 1, 37, 16)])
def test_exact_matches_autograd(B: int, H: int, S: int, D: int) -> None:
    d = inputs.make_inputs({"B": B, "H": H, "S": S, "D": D}, seed=S, device="cpu")
    for got, want in zip(reference.exact(**d), autograd_float64(d), strict=True):
        assert got.dtype == torch.float64 and rel(got, want) < 1e-12


def test_reference_is_float32_autograd_and_close_to_exact() -> None:
    d = inputs.make_inputs({"B": 1, "H": 2, "S": 96, "D": 32}, seed=3, device="cpu")
    outs = reference.reference(**d)
    for out, want in zip(outs, reference.exact(**d), strict=True):
        assert out.dtype == torch.bfloat16 and out.shape == (1, 2, 96, 32) and out.is_contiguous()
        assert 5e-4 < rel(out, want) < 3e-3  # one bfloat16 rounding
    # the reference recomputes its own forward: o and lse do not change it
    changed = dict(d, o=torch.zeros_like(d["o"]), lse=torch.zeros_like(d["lse"]))
    assert all(torch.equal(a, b) for a, b in zip(reference.reference(**changed), outs, strict=True))
    with pytest.raises(ValueError):
        reference.reference(**dict(d, lse=d["lse"].double()))


def test_inputs_are_deterministic_consistent_and_realistic() -> None:
    wl = {"B": 2, "H": 4, "S": 128, "D": 64}
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[n], b[n]) for n in ("q", "k", "v", "o", "do", "lse")) and a["scale"] == 1 / math.sqrt(64)
    assert all(a[n].dtype == torch.bfloat16 and a[n].shape == (2, 4, 128, 64) for n in ("q", "k", "v", "o", "do"))
    assert a["lse"].dtype == torch.float32 and a["lse"].shape == (2, 4, 128)
    other = inputs.make_inputs(wl, seed=8, device="cpu")
    assert not torch.equal(a["q"], other["q"])
    # o and lse are the forward's: a float64 forward agrees to bfloat16 (o) and float32 (lse) precision
    q, k, v = (a[n].double() for n in "qkv")
    s = (q @ k.transpose(-2, -1) * a["scale"]).masked_fill(torch.ones(128, 128, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    assert float((a["lse"].double() - lse).abs().max()) < 1e-4
    p = torch.softmax(s, dim=-1)
    assert rel(a["o"], p @ v) < 4e-3
    # heads differ: some flat, some peaked (mean largest probability per head over the later rows)
    peak = p[:, :, 32:].amax(dim=-1).mean(dim=(0, 2))
    assert float(peak.min()) < 0.2 and float(peak.max()) > 0.25 and float(peak.max() / peak.min()) > 2
    # the forward's saved tensors give the true gradients (to bfloat16 precision of o)
    exact = reference.exact(**a)
    for got, want in zip(from_saved_float64(a), exact, strict=True):
        assert rel(got, want) < 5e-3
    # delta matters: dropping it is far outside the tolerance (dq, dk)
    dq_no_delta = a["scale"] * (p * (a["do"].double() @ v.transpose(-2, -1))) @ k
    assert rel(dq_no_delta, exact[0]) > 0.5
    # every input moves the gradients: q, k, v, do through exact(); o and lse through the fused formulas
    for name in ("q", "k", "v", "do"):
        changed = dict(a, **{name: (a[name].float() * 1.5).to(torch.bfloat16)})
        moved = [rel(x, y) for x, y in zip(reference.exact(**changed), exact, strict=True)]
        assert max(moved) > 1e-2, name
    base = from_saved_float64(a)
    for name, value in (("o", (a["o"].float() * 1.5).to(torch.bfloat16)), ("lse", a["lse"] + 0.5)):
        moved = [rel(x, y) for x, y in zip(from_saved_float64(dict(a, **{name: value})), base, strict=True)]
        assert max(moved) > 1e-2, name


@pytest.mark.parametrize(
    ("B", "H", "S", "D"),
    [
        pytest.param(1, 2, 64, 32, marks=pytest.mark.slow),
        pytest.param(1, 3, 100, 64, marks=pytest.mark.slow),
        (2, 1, 20, 16),
        (1, 1, 97, 32),
    ],
)
def test_expert_and_naive_match_exact_in_process(B: int, H: int, S: int, D: int, exact_bf16_dot: None) -> None:
    d = inputs.make_inputs({"B": B, "H": H, "S": S, "D": D}, seed=S + D, device="cpu")
    oracle = reference.exact(**d)
    tol = TASK.spec.tolerance
    for solution in (expert, naive):
        outs = solution.run(**d)
        for name, out, want in zip(NAMES, outs, oracle, strict=True):
            assert out.dtype == torch.bfloat16 and out.shape == (B, H, S, D) and out.is_contiguous()
            result = compare(out, want, tol.rule_for(name))
            assert result.ok and result.rel_err < 0.7 * (result.bound or 0.0), (solution.__name__, name, result.message)


def test_expert_rejects_what_it_cannot_run() -> None:
    d = inputs.make_inputs({"B": 1, "H": 1, "S": 16, "D": 24}, seed=0, device="cpu")
    with pytest.raises(ValueError, match="power of two"):
        expert.run(**d)


def test_h200_configs_tile_the_registered_shapes() -> None:
    for workload in TASK.spec.workloads:
        S, D = workload.axes["S"], workload.axes["D"]
        cfg = expert.config_for(S, D, interpret=False)
        assert cfg == expert.H200_CONFIGS[D]
        assert cfg.block_n1 % cfg.block_m1 == 0 and cfg.block_m2 % cfg.block_n2 == 0  # whole diagonal blocks
        assert S % cfg.block_n1 == 0 and S % cfg.block_m2 == 0  # EVEN: no bounds masks on the GPU
        # the stationary tiles and two stages of streamed tiles fit the H200's 228 KB of shared memory
        stationary = 2 * cfg.block_n1 * D * 2
        streamed = cfg.stages1 * 2 * cfg.block_m1 * D * 2
        assert stationary + streamed <= 160 * 1024
    cfg = expert.config_for(100, 64, interpret=True)
    assert 100 % cfg.block_n1 != 0 and cfg.block_n1 > cfg.block_m1  # the smoke shapes cross blocks and a ragged edge
