"""Red-team cases for ``chunked_gla``: plausible wrong kernels, one rejected through the real harness (the others in process).

Each cheat in ``chunked_gla_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its ``gla`` launcher available) and evaluated on the CPU:

* ``state_not_passed``: every chunk of 16 steps starts from a zero state. Caught on the long-memory heads.
* ``decay_once_per_chunk``: no decay inside a chunk, the carried state multiplied by the chunk's total decay.
  Caught on the short-memory heads.
* ``diagonal_excluded``: step t reads the state before its own key and value are added (the mask j < i).
  Caught on every head whose recent steps dominate its output.
* ``gate_cumsum_in_bf16``: the chunk-local cumulative gate (chunks of 64) accumulated in bfloat16. A small
  error, not a far one: 1.1-6x the bound on the fresh calls of heads with short memory, 3.5-92x on the
  x1000-scaled call (docs/tolerance-chunked_gla.md); held here to failing both.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("chunked_gla")
CASES = {
    "state_not_passed": "smoke_b2_h4_t40_d32",
    "decay_once_per_chunk": "smoke_b2_h4_t40_d32",
    "diagonal_excluded": "smoke_b2_h4_t40_d32",
    "gate_cumsum_in_bf16": "smoke_b2_h4_t40_d32",
}
NOT_FAR = {"gate_cumsum_in_bf16"}  # wrong by a small factor (see the module's docstring)

# evaluated through the whole harness (the suite's time is counted): one per task, the end-to-end path; every
# cheat is run in process (the others' rejection is the same comparison)
THROUGH_THE_HARNESS = ("state_not_passed",)
IN_PROCESS_SHAPES = ({"B": 2, "H": 4, "T": 40, "D": 32},)  # one shape: the study (scripts/) covers more


def test_every_cheat_file_has_a_case() -> None:
    assert cheats_of(TASK.id) == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (3-5 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", THROUGH_THE_HARNESS)
def test_chunked_gla_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, CASES[cheat], "o", tmp_path)


@pytest.mark.slow  # kernels under the interpreter, in process (about 15 s on a 2-core CPU)
def test_cheats_are_wrong_on_the_blocks_they_get_wrong(tmp_path: Path, interpreter_fixed: None) -> None:
    """In process, on small shapes with a fresh and an x1000-scaled call: each cheat's worst compared matrix
    is >= 10x over the bound (over it on the fresh call and >= 3x on the scaled one for the NOT_FAR case), and
    honest_run passes the fresh call (checked once per shape: it is the same naive solution in every assembled
    file)."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_chunked_gla_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_chunked_gla_inputs").make_inputs
    modules = {c: import_file(assemble(TASK.id, c, tmp_path), f"_rt_chunked_gla_{c}") for c in sorted(CASES)}
    rule = TASK.spec.tolerance
    bound = rule.matrix_rel_fro or 0.0

    def worst(run: Callable[..., tuple[torch.Tensor, torch.Tensor]], made: dict[str, torch.Tensor], want: Any) -> float:
        o, state = run(**made)
        got = reference.steps({"o": o, "final_state": state}, made)
        return max(compare(got[n], want[n], rule).rel_err for n in ("o", "final_state"))

    for seed, axes in enumerate(IN_PROCESS_SHAPES, start=21):
        fresh = make(axes, seed, "cpu")
        scaled = {name: tensor * 1000.0 for name, tensor in fresh.items()}
        wants = [
            reference.steps(dict(zip(("o", "final_state"), reference.exact(**made), strict=True)), made)
            for made in (fresh, scaled)
        ]
        for cheat, module in modules.items():
            far = (1.0, 3.0) if cheat in NOT_FAR else (10.0, 10.0)
            for made, want, times in zip((fresh, scaled), wants, far, strict=True):
                assert worst(module.run, made, want) > times * bound, (cheat, axes, made is scaled)
        # the honest run on the fresh call only (the naive recurrence is the slow part under the interpreter; the
        # harness runs it on the scaled call too, in tests/test_task_suite.py)
        assert worst(module.honest_run, fresh, wants[0]) < 0.5 * bound, axes
