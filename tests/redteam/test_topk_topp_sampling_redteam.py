"""Red-team cases for ``topk_topp_sampling``: wrong samplers, each caught by the law check of the draws.

Each cheat in ``topk_topp_sampling_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its kernels available) and run under the interpreter:

* ``seed_ignored``: a fixed seed; each row's token is drawn from the right law, but the same on every call.
  Caught by the pairs of calls that differ only in the seed (the "across seeds" test), through the harness.
* ``greedy_argmax``: the most likely token, always. In the support; caught by the law and across seeds.
* ``common_k_assumed``: k = 50 for every row (the generator's common value). Caught where a row has k < 50: draws
  outside the support.
* ``nucleus_over_full_softmax``: top-p measured against the whole vocabulary's mass, not the top-k mass. Caught
  where top-k cuts real mass: draws the nucleus excludes.

The statistical power of the check itself (4096 draws, cheaper samplers written in torch) is tested in
tests/test_draw_law.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.draws import DrawPool, DrawsInvalid
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("topk_topp_sampling")
REFERENCE = import_file(TASK.file("reference.py"), "_rt_topk_topp_reference")
MAKE = import_file(TASK.file("inputs.py"), "_rt_topk_topp_inputs").make_inputs

THROUGH_THE_HARNESS = {"seed_ignored": "smoke_b16_v1000"}
IN_PROCESS_ONLY = ("greedy_argmax", "common_k_assumed", "nucleus_over_full_softmax")


def test_every_cheat_file_is_evaluated() -> None:
    assert cheats_of(TASK.id) == {*THROUGH_THE_HARNESS, *IN_PROCESS_ONLY}


@pytest.mark.slow  # a whole evaluation (about 15 s on a 2-core CPU: the pairs of calls for the draws)
@pytest.mark.parametrize(("cheat", "workload"), sorted(THROUGH_THE_HARNESS.items()))
def test_topk_topp_sampling_cheat_rejected_on_cpu(cheat: str, workload: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, workload, "tokens", tmp_path)


def _inputs(cheat: str) -> dict[str, object]:
    """Inputs where the cheat's bug shows: the generator's for the law's cheats; k = 5 on every row for the
    assumed k; k = 50 and p = 0.5 on every row for the nucleus (flat rows: top-k cuts most of the mass)."""
    made = MAKE({"B": 16, "V": 1000}, 41, "cpu")
    logits = made["logits"]
    assert isinstance(logits, torch.Tensor)
    if cheat == "common_k_assumed":
        made["top_k"] = torch.full((16,), 5, dtype=torch.int32)
        made["top_p"] = torch.ones(16, dtype=torch.float32)
    if cheat == "nucleus_over_full_softmax":
        made["logits"] = (torch.randn(16, 1000, generator=torch.Generator().manual_seed(3)) * 1.5).to(torch.bfloat16).float()
        made["top_k"] = torch.full((16,), 50, dtype=torch.int32)
        made["top_p"] = torch.full((16,), 0.5, dtype=torch.float32)
    return made


def _verdict(run: object, made: dict[str, object], calls: int) -> str | None:
    """Pool `calls` pairs of calls (seeds 2i and 2i+1) and say why the law rejects them (None: it does not)."""
    pool = DrawPool(7, "redteam", "tokens")
    for i in range(calls):
        first = None
        for seed in (2 * i + 100, 2 * i + 101):
            call = {**made, "seed": seed}
            tokens = run(**call)  # type: ignore[operator]
            try:
                u = pool.add(REFERENCE.draw_intervals({"tokens": tokens}, call), first)
            except DrawsInvalid as exc:
                return str(exc)
            first = u if first is None else None
    return pool.failure(1e-6)


@pytest.mark.slow  # the naive kernels under the interpreter, in process (about 3 s a call on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(IN_PROCESS_ONLY))  # the harness's cases are rejected through it above
def test_cheats_are_caught_where_their_bug_shows(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_topk_topp_{cheat}")
    made = _inputs(cheat)
    calls = 2 if cheat == "greedy_argmax" else 1
    assert _verdict(module.run, made, calls) is not None, cheat
    assert _verdict(module.honest_run, made, 1) is None, cheat
