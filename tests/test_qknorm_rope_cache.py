"""The qknorm_rope_cache task: the oracle checked by an independent formula, inputs, the expert and the naive solution."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare, relative_errors
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("qknorm_rope_cache")
reference = import_file(TASK.file("reference.py"), "_test_qknorm_rope_cache_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_qknorm_rope_cache_inputs")
expert = import_file(TASK.file("expert.py"), "_test_qknorm_rope_cache_expert")
NAIVE = REPO / "tests" / "solutions" / "qknorm_rope_cache_naive.py"
naive = import_file(NAIVE, "_test_qknorm_rope_cache_naive")

Inputs = dict[str, torch.Tensor]


def workload(T: int, Hq: int, Hkv: int, D: int, R: int, P: int = 512, NB: int | None = None) -> dict[str, int]:
    return {"T": T, "Hq": Hq, "Hkv": Hkv, "D": D, "R": R, "P": P, "NB": NB or max(8, T // 4)}


def clone(d: Inputs) -> Inputs:
    return {k: v.clone() for k, v in d.items()}


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def run_exact(d: Inputs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """exact() on a copy: (q_out, k_cache after, v_cache after)."""
    c = clone(d)
    return reference.exact(**c), c["k_cache"], c["v_cache"]


def complex_rope_oracle(d: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
    """q_out and the written k rows by another route: F.rms_norm in float64 and NeoX pairs as complex numbers."""
    T, Hkv, D = d["qkv"].shape[0], d["k_cache"].shape[2], d["k_cache"].shape[3]
    Hq, R = d["qkv"].shape[1] // D - 2 * Hkv, d["cos_sin_cache"].shape[1]
    heads = d["qkv"].double().view(T, Hq + 2 * Hkv, D)
    table = d["cos_sin_cache"].double()[d["positions"]]
    turn = torch.complex(table[:, : R // 2], table[:, R // 2 :])  # cos + i sin, as the table gives them

    def one(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        n = torch.nn.functional.rms_norm(x, (D,), w.double(), eps=reference.EPS)
        z = torch.complex(n[..., : R // 2], n[..., R // 2 : R]) * turn[:, None, :]
        return torch.cat((z.real, z.imag, n[..., R:]), dim=-1)

    return one(heads[:, :Hq], d["q_norm_weight"]), one(heads[:, Hq : Hq + Hkv], d["k_norm_weight"])


@pytest.mark.parametrize(("T", "Hq", "Hkv", "D", "R"), [(24, 4, 2, 64, 64), (20, 6, 2, 32, 16), (33, 4, 1, 48, 32)])
def test_exact_matches_an_independent_formula(T: int, Hq: int, Hkv: int, D: int, R: int) -> None:
    d = inputs.make_inputs(workload(T, Hq, Hkv, D, R), seed=T, device="cpu")
    q, k_cache, v_cache = run_exact(d)
    q_ind, k_ind = complex_rope_oracle(d)
    assert rel(q, q_ind) < 1e-12
    slots = d["slot_mapping"]
    assert rel(k_cache.view(-1, Hkv, D)[slots], k_ind) < 4e-3  # the oracle's cache holds k rounded to bf16
    assert torch.equal(v_cache.view(-1, Hkv, D)[slots], d["qkv"].view(T, -1, D)[:, Hq + Hkv :])
    untouched = torch.ones(k_cache.shape[0] * 16, dtype=torch.bool)
    untouched[slots] = False
    for after, before in ((k_cache, d["k_cache"]), (v_cache, d["v_cache"])):
        assert torch.equal(after.view(-1, Hkv, D)[untouched], before.view(-1, Hkv, D)[untouched])


def test_reference_is_vllm_bf16_math_and_close_to_exact() -> None:
    d = inputs.make_inputs(workload(64, 8, 2, 64, 32, NB=16), seed=3, device="cpu")
    r = clone(d)
    q = reference.reference(**r)
    assert q.dtype == torch.bfloat16 and q.shape == (64, 8, 64) and q.is_contiguous()
    eq, ek, ev = run_exact(d)
    per_token = relative_errors(q, eq)
    assert 1e-3 < float(per_token.max()) < 8e-3  # several bfloat16 roundings, as vLLM's forward_native
    assert float(relative_errors(r["k_cache"], ek).max()) < 8e-3  # per slot
    assert torch.equal(r["v_cache"], ev)


def test_inputs_are_deterministic_realistic_and_every_input_matters() -> None:
    wl = workload(64, 8, 2, 64, 32, NB=16)
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert a["qkv"].dtype == torch.bfloat16 and a["cos_sin_cache"].dtype == torch.float32
    assert a["positions"].dtype == a["slot_mapping"].dtype == torch.int64
    heads = a["qkv"].float().view(64, -1, 64)
    rms = heads.square().mean(dim=-1).sqrt()
    assert float((rms.max(dim=1).values / rms.min(dim=1).values).min()) > 2  # heads of a token differ in scale
    for w in (a["q_norm_weight"], a["k_norm_weight"]):
        assert 0.5 < float(w.float().mean()) < 2 and float(w.float().std()) > 0.2
    base = run_exact(a)
    for name in a:  # every input moves q_out or a cache
        changed = clone(a)
        if name in ("positions", "slot_mapping"):
            changed[name] = changed[name].flip(0)
        else:
            changed[name] = (changed[name].float() * 1.5 + (0.5 if name == "cos_sin_cache" else 0)).to(changed[name].dtype)
        new = run_exact(changed)
        moved = [rel(n, o) > 1e-3 for n, o in zip(new, base, strict=True)]
        assert any(moved), name


@pytest.mark.parametrize(("T", "P", "NB"), [(24, 512, 8), (256, 32768, 48), (4096, 32768, 512), (8192, 32768, 1024)])
def test_batches_are_not_arange_and_slots_follow_a_block_table(T: int, P: int, NB: int) -> None:
    gen = torch.Generator()
    for seed in range(5):
        gen.manual_seed(seed)
        pos, slots = inputs.batch_layout(T, P, NB, gen)
        ar = torch.arange(T)
        assert pos.shape == slots.shape == (T,) and not torch.equal(pos, ar) and not torch.equal(slots, ar)
        assert int(pos.min()) >= 0 and int(pos.max()) < P
        assert slots.unique().numel() == T and int(slots.min()) >= 0 and int(slots.max()) < 16 * NB
        assert torch.equal(slots % 16, pos % 16)  # a token at position p sits at offset p % 16 of its block
        assert int((pos[1:] != pos[:-1] + 1).sum()) >= 1  # decode tokens: not one run of positions
        assert (slots // 16).unique().numel() > T // 16  # blocks scattered, not packed in order


@pytest.mark.parametrize(
    ("T", "Hq", "Hkv", "D", "R"),
    [
        pytest.param(24, 4, 2, 64, 64, marks=pytest.mark.slow),  # 2-4 s each under the interpreter: the odd shape stays
        pytest.param(20, 6, 2, 32, 16, marks=pytest.mark.slow),
        (33, 4, 1, 48, 32),
        pytest.param(8, 32, 8, 128, 64, marks=pytest.mark.slow),
    ],
)
def test_expert_and_naive_match_exact_in_process(T: int, Hq: int, Hkv: int, D: int, R: int) -> None:
    d = inputs.make_inputs(workload(T, Hq, Hkv, D, R), seed=1, device="cpu")
    eq, ek, ev = run_exact(d)
    tol = TASK.spec.tolerance
    for solution in (expert, naive):
        c = clone(d)
        q = solution.run(**c)
        assert q.dtype == torch.bfloat16 and q.shape == (T, Hq, D)
        for name, out, exp in (("q_out", q, eq), ("k_cache", c["k_cache"], ek), ("v_cache", c["v_cache"], ev)):
            rule = tol.rule_for(name)
            result = compare(out, exp, rule)
            assert result.ok, (solution.__name__, name, result.message)
            if rule.matrix_rel_fro is not None:
                assert result.rel_err < 0.6 * rule.matrix_rel_fro, (solution.__name__, name, result.rel_err)


def test_launch_shape_follows_the_token_count() -> None:
    # the registered shapes on a 132-SM H200: a program per token at T = 8192 and 4096, per kv head at 256
    sms = 132
    assert [expert.num_groups(T, 8, sms) for T in (8192, 4096, 256)] == [1, 1, 8]
    whole = expert.config_for(8192, 32, 8, 128, 128, sms)
    assert (whole.block_qh, whole.block_kh, whole.block_half, whole.block_rest, whole.num_warps) == (32, 8, 64, 0, 4)
    partial = expert.config_for(4096, 32, 8, 128, 64, sms)
    assert (partial.block_half, partial.block_rest) == (32, 64)
    grouped = expert.config_for(256, 32, 8, 128, 128, sms)
    assert (grouped.groups, grouped.block_qh, grouped.block_kh, grouped.num_warps) == (8, 4, 1, 2)
    assert expert.config_for(24, 4, 2, 64, 64, expert.INTERPRET_SMS).groups == 2  # the smoke run groups too


def test_roofline_formulas_count_the_bytes() -> None:
    for wl in TASK.spec.workloads:
        T, Hq, Hkv, D, R = (wl.axes[a] for a in ("T", "Hq", "Hkv", "D", "R"))
        floor = 2 * T * (Hq + 2 * Hkv) * D + 2 * T * Hq * D + 2 * 2 * T * Hkv * D + 4 * T * R + 16 * T + 2 * 2 * D
        assert TASK.bytes_moved(wl) == floor
        ref_bytes = TASK.reference_bytes(wl)
        assert ref_bytes is not None and 8 < ref_bytes / floor < 13  # the eager dataflow moves ~10x the floor
        assert TASK.min_flops(wl) == TASK.flops(wl) > 0
