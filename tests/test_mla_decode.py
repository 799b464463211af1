"""The mla_decode task: the absorbed oracle against the up-projected form, inputs, the expert and the naive solution."""

from __future__ import annotations

import math
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
TASK = CATALOG.task("mla_decode")
reference = import_file(TASK.file("reference.py"), "_test_mla_decode_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_mla_decode_inputs")
expert = import_file(TASK.file("expert.py"), "_test_mla_decode_expert")
NAIVE = REPO / "tests" / "solutions" / "mla_decode_naive.py"
naive = import_file(NAIVE, "_test_mla_decode_naive")

SMALL = {"B": 2, "L": 96, "H": 8, "DC": 64, "DR": 16, "DN": 32, "DV": 32}


@pytest.fixture
def interpreter() -> Iterator[None]:
    """The interpreter's bfloat16 tl.dot fixed as the harness's solution process fixes it (interpreter_fix)."""
    uninstall = interpreter_fix.install()
    try:
        yield
    finally:
        uninstall()


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """The worst per-sequence relative Frobenius error (the task's rule)."""
    d = (a.double() - b.double()).flatten(1).norm(dim=1) / b.double().flatten(1).norm(dim=1)
    return float(d.max())


@pytest.mark.parametrize("wl", [SMALL, {"B": 3, "L": 50, "H": 4, "DC": 48, "DR": 8, "DN": 24, "DV": 40}])
def test_absorbed_oracle_equals_the_up_projected_form(wl: dict[str, int]) -> None:
    d = inputs.make_inputs(wl, seed=wl["L"], device="cpu")
    assert rel(reference.exact(**d), reference.exact_unabsorbed(**d)) < 1e-12


def test_oracle_chunks_and_reference_chunks_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    d = inputs.make_inputs({**SMALL, "B": 5}, seed=2, device="cpu")
    whole_e, whole_r = reference.exact(**d), reference.reference(**d)
    monkeypatch.setattr(reference, "EXACT_CHUNK_BYTES", 1)  # one sequence per chunk
    monkeypatch.setattr(reference, "REFERENCE_CHUNK_BYTES", 1)
    assert rel(reference.exact(**d), whole_e) < 1e-14  # float64 batched sums may reorder
    assert rel(reference.reference(**d), whole_r) < 1e-6


def test_reference_is_the_eager_path_and_close_to_exact() -> None:
    d = inputs.make_inputs(SMALL, seed=3, device="cpu")
    o = reference.reference(**d)
    assert o.dtype == torch.bfloat16 and o.shape == (2, 8, 32) and o.is_contiguous()
    e = reference.exact(**d)
    assert 1e-3 < rel(o, e) < 0.5 * TASK.spec.tolerance.matrix_rel_fro  # type: ignore[operator]


def test_inputs_are_deterministic_realistic_and_every_input_moves_the_output() -> None:
    a, b = inputs.make_inputs(SMALL, seed=7, device="cpu"), inputs.make_inputs(SMALL, seed=7, device="cpu")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert all(t.dtype == torch.bfloat16 and t.is_contiguous() for t in a.values())
    c = a["kv_c"].float()
    rms = c.square().mean(dim=-1).sqrt()
    assert float(rms.max() / rms.min()) < 1.5  # the latent is RMS-normalised per token (times a gain)
    # the logits span peaked and flat heads
    f = torch.float64
    q_lat = torch.einsum("bhn,hnc->bhc", a["q_nope"].to(f), a["w_uk"].to(f))
    s = torch.einsum("bhc,blc->bhl", q_lat, c.double()) + torch.einsum("bhr,blr->bhl", a["q_pe"].to(f), a["k_pe"].to(f))
    s = s / math.sqrt(SMALL["DN"] + SMALL["DR"])
    top = torch.softmax(s, dim=-1).max(dim=-1).values
    assert float(top.max()) > 0.3 and float(top.min()) < 0.1
    base = reference.exact(**a)
    for name in a:  # every input moves the output
        changed = {k: v.clone() for k, v in a.items()}
        changed[name] = (changed[name].float() * 1.5).to(torch.bfloat16)
        assert rel(reference.exact(**changed), base) > 1e-2, name


@pytest.mark.parametrize(
    "wl",
    [
        SMALL,
        pytest.param({"B": 3, "L": 150, "H": 4, "DC": 32, "DR": 16, "DN": 16, "DV": 16}, marks=pytest.mark.slow),
        pytest.param({"B": 5, "L": 40, "H": 16, "DC": 64, "DR": 32, "DN": 32, "DV": 64}, marks=pytest.mark.slow),
    ],
)
def test_expert_and_naive_match_exact_in_process(wl: dict[str, int], interpreter: None) -> None:
    d = inputs.make_inputs(wl, seed=1, device="cpu")
    oracle = reference.exact(**d)
    tol = TASK.spec.tolerance
    for solution in (expert, naive):
        out = solution.run(**d)
        assert out.dtype == torch.bfloat16 and out.shape == oracle.shape and out.is_contiguous()
        result = compare(out, oracle, tol)
        assert result.ok and result.rel_err < 0.75 * tol.matrix_rel_fro, (solution.__name__, result.message)  # type: ignore[operator]


def test_split_count_fills_one_wave_on_the_h200() -> None:
    # the registered shapes with 64-head blocks (2 per sequence) and 32-token tiles on 132 SMs
    assert expert.num_splits(64, 4096, 2, 32, 132) == (1, 4096)
    assert expert.num_splits(16, 32768, 2, 32, 132) == (4, 8192)
    assert expert.num_splits(128, 1024, 2, 32, 132) == (1, 1024)
    # the interpreter's smoke shapes: several splits, a ragged last one, and the unmerged path
    for (B, L, hb), want in {(2, 96, 2): 3, (3, 150, 1): 4, (5, 40, 4): 1}.items():
        splits, split_len = expert.num_splits(B, L, hb, 16, expert.INTERPRET_SMS)
        assert splits == want and (splits - 1) * split_len < L <= splits * split_len and split_len % 16 == 0
