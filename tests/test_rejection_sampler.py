"""rejection_sampler: the law of an outcome, the intervals the harness checks (and the rows they refuse), the
inputs, and the expert's and the naive solution's outputs in process under the interpreter. The harness's runs
(smoke workloads) are in tests/test_task_suite.py; the law check itself in tests/test_draw_law.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.draws import DrawPool
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("rejection_sampler")
reference = import_file(TASK.file("reference.py"), "_test_rejection_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_rejection_inputs")


def _tiny() -> dict[str, object]:
    """One request, two drafts over three tokens: draft 0 is token 1 (p 0.2, q 0.4: accepted half the time),
    draft 1 is token 0 (p 0.5 >= q 0.25: always accepted)."""
    q = torch.tensor([[[0.3, 0.4, 0.3], [0.25, 0.5, 0.25]]])
    p = torch.tensor([[[0.5, 0.2, 0.3], [0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]])
    return {"draft_probs": q, "target_probs": p, "draft_ids": torch.tensor([[1, 0]]), "seed": 0}


def test_outcome_masses_and_the_final_laws() -> None:
    made = _tiny()
    masses = reference._outcome_masses(made["draft_probs"], made["target_probs"], made["draft_ids"])
    assert masses[0].tolist() == pytest.approx([0.5, 0.0, 0.5])  # rejected at 0, never at 1, all accepted
    residual = reference.final_law(made["draft_probs"], made["target_probs"], torch.tensor([0]))
    assert residual[0].tolist() == pytest.approx([1.0, 0.0, 0.0])  # max(p - q, 0) = [0.2, 0, 0]
    bonus = reference.final_law(made["draft_probs"], made["target_probs"], torch.tensor([2]))
    assert bonus[0].tolist() == pytest.approx([0.1, 0.1, 0.8])


def test_intervals_order_outcomes_by_accepted_count_then_probability() -> None:
    made = _tiny()
    rows = {(0, -1, -1): None, (1, 0, 2): None, (1, 0, 0): None}
    got = {r: reference.draw_intervals({"tokens": torch.tensor([r])}, made)[0].tolist() for r in rows}
    assert got[(0, -1, -1)] == pytest.approx([0.0, 0.5])  # n = 0, token 0: the whole residual
    assert got[(1, 0, 2)] == pytest.approx([0.5, 0.9])  # n = 2, bonus token 2 (0.8, first by probability)
    assert got[(1, 0, 0)] == pytest.approx([0.9, 0.95])  # n = 2, bonus token 0 (0.1, before token 1 by id)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ((2, 0, 1), "not its draft"),  # first entry claims acceptance of a token that is not draft 0
        ((1, -1, 2), "then -1"),  # a hole before the final token
        ((-1, -1, -1), "then -1"),  # no token at all
        ((1, 0, 3), "outside the vocabulary"),
    ],
)
def test_rows_that_are_not_outcomes_are_refused(row: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reference.draw_intervals({"tokens": torch.tensor([row])}, _tiny())


def test_a_final_token_the_law_never_draws_has_an_empty_interval() -> None:
    lo, hi = reference.draw_intervals({"tokens": torch.tensor([[2, -1, -1]])}, _tiny())[0].tolist()
    assert lo == hi  # rejected at 0 and token 2 drawn: its residual max(0.3 - 0.3, 0) is 0


def test_inputs_are_deterministic_and_realistic() -> None:
    made = inputs.make_inputs({"B": 32, "D": 4, "V": 2000}, 9, "cpu")
    again = inputs.make_inputs({"B": 32, "D": 4, "V": 2000}, 9, "cpu")
    assert all(torch.equal(made[n], again[n]) for n in ("draft_probs", "target_probs", "draft_ids"))
    q, p, ids = made["draft_probs"], made["target_probs"], made["draft_ids"]
    assert torch.allclose(q.sum(-1), torch.ones(32, 4), atol=1e-5) and torch.allclose(p.sum(-1), torch.ones(32, 5), atol=1e-5)
    assert bool((q.gather(2, ids.unsqueeze(2)) > 0).all())
    masses = reference._outcome_masses(q, p, ids)
    rate = float((masses * torch.arange(5)).sum(1).mean()) / 4
    assert 0.45 < rate < 0.9, rate  # a draft model that mostly agrees with the target
    assert float(masses[:, 0].mean()) > 0.05 and float(masses[:, 4].mean()) > 0.1  # every outcome occurs


@pytest.mark.slow  # 32 pairs of calls of the reference's loop (about 10 s on a 2-core CPU)
def test_the_reference_passes_a_registered_workloads_pool() -> None:
    pool = DrawPool(11, "reference", "tokens")
    for i in range(32):
        made = inputs.make_inputs({"B": 64, "D": 4, "V": 1000}, 300 + i, "cpu")
        first = None
        for seed in (2 * i, 2 * i + 1):
            call = {**made, "seed": seed}
            first = pool.add(reference.draw_intervals({"tokens": reference.reference(**call)}, call), first)
    assert pool.draws == 4096 and pool.failure(1e-6) is None


@pytest.mark.slow  # kernels under the interpreter, in process (about 1 s a call on a 2-core CPU)
@pytest.mark.parametrize("name", ["expert", "naive"])
def test_the_kernels_follow_the_law_and_repeat_for_a_seed(name: str, interpreter_fixed: None) -> None:
    path = TASK.file("expert.py") if name == "expert" else REPO / "tests" / "solutions" / "rejection_sampler_naive.py"
    module = import_file(path, f"_test_rejection_{name}")
    made = inputs.make_inputs({"B": 8, "D": 5, "V": 1100}, 4, "cpu")  # D + 1 = 6 (padded to 8), two blocks
    first = module.run(**made)
    assert torch.equal(first, module.run(**made))
    pool = DrawPool(2, name, "tokens")
    previous = None
    for seed in (1, 2, 3, 4):
        call = {**made, "seed": seed}
        previous = pool.add(reference.draw_intervals({"tokens": module.run(**call)}, call), previous if seed % 2 == 0 else None)
    assert pool.failure(1e-6) is None
