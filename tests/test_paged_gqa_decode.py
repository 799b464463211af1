"""The paged_gqa_decode task: the oracle checked by an independent route, inputs, the expert and the naive solution."""

from __future__ import annotations

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
TASK = CATALOG.task("paged_gqa_decode")
reference = import_file(TASK.file("reference.py"), "_test_paged_gqa_decode_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_paged_gqa_decode_inputs")
expert = import_file(TASK.file("expert.py"), "_test_paged_gqa_decode_expert")
NAIVE = REPO / "tests" / "solutions" / "paged_gqa_decode_naive.py"
naive = import_file(NAIVE, "_test_paged_gqa_decode_naive")

Inputs = dict[str, object]


def workload(B: int, Hq: int, Hkv: int, D: int, L: int, NP: int | None = None) -> dict[str, int]:
    return {"B": B, "Hq": Hq, "Hkv": Hkv, "D": D, "L": L, "NP": NP or B * L // 16}


def per_sequence_rel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Relative Frobenius error of each sequence's [Hq, D] output (as the checker measures it)."""
    diff = (a.double() - b.double()).flatten(1).norm(dim=1)
    rel: torch.Tensor = diff / b.double().flatten(1).norm(dim=1)
    return rel


def padded_float64(d: Inputs) -> torch.Tensor:
    """Another route to the oracle: the reference's padded gather and head repetition, in float64."""
    q, kc, vc = d["q"], d["k_cache"], d["v_cache"]
    assert isinstance(q, torch.Tensor) and isinstance(kc, torch.Tensor) and isinstance(vc, torch.Tensor)
    pt, lens, scale = d["page_table"], d["seq_lens"], d["scale"]
    assert isinstance(pt, torch.Tensor) and isinstance(lens, torch.Tensor) and isinstance(scale, float)
    B, Hq, D = q.shape
    Hkv, L = kc.shape[2], pt.shape[1] * 16
    heads = torch.arange(Hq) // (Hq // Hkv)
    k = kc[pt.long()].reshape(B, L, Hkv, D).double()[:, :, heads]  # [B, L, Hq, D]
    v = vc[pt.long()].reshape(B, L, Hkv, D).double()[:, :, heads]
    s = torch.einsum("bhd,blhd->bhl", q.double(), k) * scale
    s = s.masked_fill(torch.arange(L)[None, None, :] >= lens.long()[:, None, None], float("-inf"))
    out: torch.Tensor = torch.einsum("bhl,blhd->bhd", torch.softmax(s, dim=-1), v)
    return out


@pytest.fixture
def interpreter_fixed() -> Iterator[None]:
    """bf16 tl.dot under the interpreter, fixed as the harness's solution process fixes it (interpreter_fix)."""
    uninstall = interpreter_fix.install()
    try:
        yield
    finally:
        uninstall()


@pytest.mark.parametrize("shape", [(4, 4, 2, 64, 96), (3, 8, 2, 32, 160), (5, 8, 1, 32, 64)])
def test_exact_matches_an_independent_route(shape: tuple[int, int, int, int, int]) -> None:
    d = inputs.make_inputs(workload(*shape), seed=sum(shape), device="cpu")
    assert float(per_sequence_rel(reference.exact(**d), padded_float64(d)).max()) < 1e-12


def test_reference_is_eager_bf16_math_and_close_to_exact() -> None:
    d = inputs.make_inputs(workload(4, 8, 2, 64, 256), seed=3, device="cpu")
    o = reference.reference(**d)
    assert o.dtype == torch.bfloat16 and o.shape == (4, 8, 64) and o.is_contiguous()
    err = per_sequence_rel(o, reference.exact(**d))
    assert 5e-4 < float(err.max()) < 1e-2  # bfloat16 scores, probabilities and output


@pytest.mark.parametrize(("B", "L"), [(64, 8192), (256, 2048), (8, 65536), (32, 32768), (3, 96), (5, 16)])
def test_lengths_are_ragged_and_total_three_quarters(B: int, L: int) -> None:
    gen = torch.Generator()
    for seed in range(4):
        gen.manual_seed(seed)
        lens = inputs.ragged_lengths(B, L, gen)
        assert int(lens.sum()) == 3 * B * L // 4  # the roofline's token count, exactly
        assert int(lens.min()) >= L // 2 and int(lens.max()) == L
        if B >= 8:
            assert int((lens % 16 != 0).sum()) > B // 2  # mostly not whole pages
            assert len(set(lens.tolist())) > B // 2


def test_inputs_are_deterministic_realistic_and_every_input_moves_the_output() -> None:
    wl = workload(6, 8, 2, 64, 128, NP=64)
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)
    pt, lens = a["page_table"], a["seq_lens"]
    assert isinstance(pt, torch.Tensor) and isinstance(lens, torch.Tensor)
    assert pt.dtype == torch.int32 and lens.dtype == torch.int32 and a["scale"] == 64**-0.5
    assert len(set(pt.flatten().tolist())) == pt.numel() and int(pt.min()) >= 0 and int(pt.max()) < 64
    assert not torch.equal(pt.flatten().long(), torch.arange(pt.numel()))  # scattered, not in order
    base = reference.exact(**a)
    # every sequence's output depends on its length: the stale slots and pages past it are different data
    longer = dict(a, seq_lens=torch.clamp(lens + 5, max=128).to(torch.int32))
    moved = per_sequence_rel(reference.exact(**longer), base)
    assert bool((moved[lens < 124] > 3e-2).all())
    # the page table is read: pointing each sequence's first entry at a page no sequence owns moves every
    # output (attention is order-free, so the page's contents must change, not just its place)
    spare = torch.tensor(sorted(set(range(64)) - set(pt.flatten().tolist()))[:6], dtype=torch.int32)
    other = pt.clone()
    other[:, 0] = spare
    assert float(per_sequence_rel(reference.exact(**dict(a, page_table=other)), base).min()) > 3e-2
    # q, k and v each move every sequence's output
    for name in ("q", "k_cache", "v_cache"):
        value = a[name]
        assert isinstance(value, torch.Tensor)
        changed = (value.float() * (1 + 0.5 * torch.rand(value.shape, generator=torch.Generator().manual_seed(1)))).to(
            value.dtype
        )
        assert float(per_sequence_rel(reference.exact(**dict(a, **{name: changed})), base).min()) > 3e-2, name
    # the softmax is neither uniform nor one-hot: logits spread about 1.3
    q, kc = a["q"], a["k_cache"]
    assert isinstance(q, torch.Tensor) and isinstance(kc, torch.Tensor)
    s = torch.einsum("hd,nhd->hn", q[0, ::4].double(), kc.reshape(-1, 2, 64).double()) * a["scale"]
    assert 0.8 < float(s.std(dim=1).mean()) < 2.5
    # the query heads of one group differ: mapping heads by h % Hkv is wrong
    assert float(per_sequence_rel(base[:, [0, 2, 1, 3, 4, 6, 5, 7]], base).min()) > 0.2


@pytest.mark.parametrize(
    "shape", [(4, 4, 2, 64, 96), pytest.param((3, 16, 2, 32, 160), marks=pytest.mark.slow), (3, 8, 1, 32, 64)]
)
def test_expert_and_naive_match_exact_in_process(shape: tuple[int, int, int, int, int], interpreter_fixed: None) -> None:
    d = inputs.make_inputs(workload(*shape), seed=1, device="cpu")
    oracle = reference.exact(**d)
    tol = TASK.spec.tolerance
    assert tol.matrix_rel_fro is not None
    for solution in (expert, naive):
        o = solution.run(**d)
        assert o.dtype == torch.bfloat16 and o.shape == oracle.shape and o.is_contiguous()
        result = compare(o, oracle, tol)
        assert result.ok and result.rel_err < 0.5 * tol.matrix_rel_fro, (solution.__name__, result.message)


def test_split_merge_matches_a_single_split(interpreter_fixed: None) -> None:
    # many splits, several of them empty for the shorter sequences, must merge to the one-split result
    d = inputs.make_inputs(workload(3, 8, 2, 32, 128), seed=5, device="cpu")
    one = expert.paged_decode(**d, cfg=expert.Config(16, 16, 1, 4, 1))
    many = expert.paged_decode(**d, cfg=expert.Config(16, 16, 7, 4, 1))
    oracle = reference.exact(**d)
    assert float(per_sequence_rel(many, oracle).max()) < 1e-2
    assert float(per_sequence_rel(many, one).max()) < 1e-2


def test_split_count_follows_the_sm_count_and_length() -> None:
    # the registered shapes on a 132-SM H200 (BLOCK_N 64, at least 4 tiles per split)
    got = {(B, L): expert.config_for(B, Hq, 8, 128, L, 132, interpret=False).num_splits for B, Hq, L in
           [(64, 32, 8192), (256, 32, 2048), (8, 32, 65536), (32, 64, 32768)]}  # fmt: skip
    assert got == {(64, 8192): 3, (256, 2048): 1, (8, 65536): 17, (32, 32768): 5}
    cfg = expert.config_for(32, 64, 8, 128, 32768, 132, interpret=False)
    assert (cfg.block_n, cfg.block_g, cfg.num_warps, cfg.num_stages) == (64, 16, 4, 3)
    assert expert.num_splits(1, 1, 128, 64, 132, 4) == 1  # never fewer than 4 tiles per split
    assert expert.config_for(4, 4, 2, 64, 96, 4, interpret=True).num_splits == 3  # smoke: one tile each, some empty
