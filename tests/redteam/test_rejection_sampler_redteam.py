"""Red-team cases for ``rejection_sampler``: wrong verifiers, each caught by the law check of the outcomes.

Each cheat in ``rejection_sampler_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its kernels available) and run under the interpreter:

* ``recover_from_target``: the recovered token drawn from p_n instead of the residual. Caught as outcomes the
  law never makes (tokens with p_n <= q_n), through the harness.
* ``accept_everything``: no verification, every draft accepted plus a bonus token. Caught by the law.
* ``seed_ignored``: a fixed seed. Caught by repeats across seeds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.checker.draws import DrawPool, DrawsInvalid
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("rejection_sampler")
REFERENCE = import_file(TASK.file("reference.py"), "_rt_rejection_reference")
MAKE = import_file(TASK.file("inputs.py"), "_rt_rejection_inputs").make_inputs

THROUGH_THE_HARNESS = {"recover_from_target": "smoke_b16_d3_v600"}
IN_PROCESS_ONLY = ("accept_everything", "seed_ignored")


def test_every_cheat_file_is_evaluated() -> None:
    assert cheats_of(TASK.id) == {*THROUGH_THE_HARNESS, *IN_PROCESS_ONLY}


@pytest.mark.slow  # a whole evaluation (about 15 s on a 2-core CPU)
@pytest.mark.parametrize(("cheat", "workload"), sorted(THROUGH_THE_HARNESS.items()))
def test_rejection_sampler_cheat_rejected_on_cpu(cheat: str, workload: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, workload, "tokens", tmp_path)


def _verdict(run: object, calls: int) -> str | None:
    """`calls` pairs of calls on fresh inputs (B = 16, D = 3, V = 600), each pair under two seeds (32 draws a call)."""
    pool = DrawPool(5, "redteam", "tokens")
    for i in range(calls):
        made = MAKE({"B": 16, "D": 3, "V": 600}, 60 + i, "cpu")
        first = None
        for seed in (2 * i, 2 * i + 1):
            call = {**made, "seed": seed}
            try:
                first = pool.add(REFERENCE.draw_intervals({"tokens": run(**call)}, call), first)  # type: ignore[operator]
            except DrawsInvalid as exc:
                return str(exc)
    return pool.failure(1e-6)


@pytest.mark.slow  # the naive kernels under the interpreter, in process (about 1 s a call on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted({*THROUGH_THE_HARNESS, *IN_PROCESS_ONLY}))
def test_cheats_are_caught_where_their_bug_shows(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_rejection_{cheat}")
    assert _verdict(module.run, calls=4) is not None, cheat  # 128 draws: accept_everything at p ~ 1e-12
    assert _verdict(module.honest_run, calls=1) is None, cheat
