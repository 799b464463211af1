"""topk_topp_sampling: the law the task defines (ties, the order of the filters), its inputs, and the expert's and
the naive solution's draws in process under the interpreter. The harness's runs (smoke workloads) are in
tests/test_task_suite.py; the law check's power and size in tests/test_draw_law.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.draws import DrawPool
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("topk_topp_sampling")


def _module(name: str, path: Path | None = None):  # type: ignore[no-untyped-def]
    return import_file(path or TASK.file(f"{name}.py"), f"_test_topk_topp_{name}")


reference = _module("reference")
inputs = _module("inputs")


def _row(values: list[float], k: int, p: float) -> torch.Tensor:
    logits = torch.tensor([values], dtype=torch.float32)
    return reference.target_probs(logits, torch.tensor([k], dtype=torch.int32), torch.tensor([p], dtype=torch.float32))[0]


def test_top_k_keeps_every_value_equal_to_the_kth() -> None:
    assert _row([3.0, 3.0, 2.0, 1.0], 1, 1.0).tolist() == pytest.approx([0.5, 0.5, 0.0, 0.0])


def test_top_p_keeps_the_token_that_crosses_p_and_ties_together() -> None:
    e = math.e
    z = e**2 + 2 * e + 1
    assert _row([2.0, 1.0, 1.0, 0.0], 4, 0.5).tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0])  # q0 = 0.64 >= 0.5
    z3 = e**2 + 2 * e
    kept = _row([2.0, 1.0, 1.0, 0.0], 4, 0.7).tolist()  # the mass above the 1s is 0.64 < 0.7: both stay, 0 goes
    assert kept == pytest.approx([e**2 / z3, e / z3, e / z3, 0.0])
    assert _row([2.0, 1.0, 1.0, 0.0], 4, 1.0).tolist() == pytest.approx([e**2 / z, e / z, e / z, 1 / z])


def test_top_p_is_measured_on_the_top_k_distribution() -> None:
    # k = 2 keeps 2.0 and 1.0 (q = 0.73, 0.27); p = 0.7 keeps the first only. Over the full softmax the first
    # would hold 0.58 < 0.7 and the second would stay.
    assert _row([2.0, 1.0, 0.5, 0.5], 2, 0.7).tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0])


def test_draw_intervals_follow_decreasing_probability_and_refuse_foreign_ids() -> None:
    logits = torch.tensor([[0.0, 2.0, 1.0]], dtype=torch.float32)
    made = {"logits": logits, "top_k": torch.tensor([3], dtype=torch.int32), "top_p": torch.tensor([1.0])}
    q = logits.double().softmax(dim=-1)[0]
    got = reference.draw_intervals({"tokens": torch.tensor([2])}, made)[0].tolist()
    assert got == pytest.approx([float(q[1]), float(q[1] + q[2])])  # token 1 first, then token 2
    with pytest.raises(ValueError, match="outside the vocabulary"):
        reference.draw_intervals({"tokens": torch.tensor([3])}, made)


@pytest.mark.parametrize("workload", [{"B": 16, "V": 1000}, {"B": 64, "V": 4099}])
def test_inputs_are_deterministic_realistic_and_far_from_the_top_p_boundary(workload: dict[str, int]) -> None:
    made = inputs.make_inputs(workload, 3, "cpu")
    again = inputs.make_inputs(workload, 3, "cpu")
    assert all(torch.equal(made[n], again[n]) for n in ("logits", "top_k", "top_p")) and made["seed"] == again["seed"]
    logits, k, p = made["logits"], made["top_k"], made["top_p"]
    assert torch.equal(logits, logits.to(torch.bfloat16).float())  # LM-head values: ties occur
    assert logits.std(dim=-1).min() > 0.5
    assert (k == 50).any() and (k == workload["V"]).any() and ((k != 50) & (k != workload["V"])).any()
    assert (p == 1.0).any() and bool(((p > 0.85) & (p < 0.95)).any()) and bool((p < 0.85).any())
    # every p < 1 keeps the same tokens as p +- 1e-5: float32 cumulative sums cannot move the cut
    for shift in (-1e-5, 1e-5):
        moved = torch.where(p < 1.0, (p.double() + shift).clamp(max=1.0), p.double()).float()
        assert torch.equal(reference.target_probs(logits, k, p) > 0, reference.target_probs(logits, k, moved) > 0)


def _draws_pass(run: object, made: dict[str, object], pairs: int) -> DrawPool:
    pool = DrawPool(3, "in-process", "tokens")
    for i in range(pairs):
        first = None
        for seed in (11 + 2 * i, 12 + 2 * i):
            call = {**made, "seed": seed}
            first = pool.add(reference.draw_intervals({"tokens": run(**call)}, call), first)  # type: ignore[operator]
    assert pool.failure(1e-6) is None
    return pool


@pytest.mark.slow  # kernels under the interpreter, in process (~2-4 s a call on a 2-core CPU)
@pytest.mark.parametrize("name", ["expert", "naive"])
def test_the_kernels_draw_the_law_deterministically_per_seed(name: str, interpreter_fixed: None) -> None:
    """A ragged shape (V = 1500: two steps of the kernels' 1024) with a tie at the top-k cut on every row."""
    module = (
        _module("expert") if name == "expert" else _module("naive", REPO / "tests" / "solutions" / "topk_topp_sampling_naive.py")
    )
    made = inputs.make_inputs({"B": 8, "V": 1500}, 5, "cpu")
    logits = made["logits"]
    top = logits.topk(3, dim=-1).values[:, 2:3]
    made["logits"][:, 7] = top[:, 0]  # token 7 equals the 3rd largest: k = 3 keeps both
    made["top_k"] = torch.full((8,), 3, dtype=torch.int32)
    first = module.run(**made)
    assert torch.equal(first, module.run(**made))  # the same seed, the same tokens
    probs = reference.target_probs(made["logits"], made["top_k"], made["top_p"])
    assert bool((probs.gather(1, first.unsqueeze(1)) > 0).all())
    _draws_pass(module.run, made, pairs=2 if name == "expert" else 1)  # the naive's bisection: 3x the interpreter's time


@pytest.mark.slow  # 16 calls of the expert under the interpreter (~1 s each on a 2-core CPU)
def test_the_expert_redraws_above_a_rejected_token_and_keeps_the_law(interpreter_fixed: None) -> None:
    """Flat rows (logits ~ N(0, 0.7^2), rounded to bfloat16) with p near 0.3: the nucleus holds dozens of tokens
    and about 30% of the top-k mass, so most rows reject their first draw (or several) and draw again above it.
    The draws must stay in the nucleus and follow its law; half the rows also cut at k = 40."""
    B, V = 16, 200
    gen = torch.Generator().manual_seed(8)
    logits = (torch.randn((B, V), generator=gen) * 0.7).to(torch.bfloat16).float()
    top_k = torch.where(torch.arange(B) % 2 == 0, V, 40).to(torch.int32)
    top_p = inputs.snap_top_p(logits, top_k, torch.full((B,), 0.3))
    made: dict[str, object] = {"logits": logits, "top_k": top_k, "top_p": top_p}
    kept = (reference.target_probs(logits, top_k, top_p) > 0).sum(dim=1)
    assert int(kept.min()) >= 5  # a real nucleus: the first draw is rejected about 70% of the time
    pool = _draws_pass(_module("expert").run, made, pairs=8)
    assert pool.draws >= 256
