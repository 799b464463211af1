"""Red-team cases for ``moe_permute``: plausible wrong kernels, each wrong by far,
one rejected through the real harness (the others in process).

Each cheat in ``moe_permute_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its kernels available) and evaluated on the CPU:

* ``unstable_order``: the slots of each expert in reverse order (what an unstable parallel sort may leave).
  Caught by ``permuted``'s exact rule: the groups are right, the rows within them are not.
* ``shifted_weights``: each slot weighted with its token's next slot's weight. Caught on ``combined``: the
  renormalised top-K weights differ within a token.
* ``inclusive_offsets``: offsets as the inclusive prefix of the counts (each expert's end for its start).
  Caught by ``offsets``' exact rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("moe_permute")
# cheat -> (the smoke workload it is evaluated on, the output it gets wrong)
CASES = {
    "unstable_order": ("smoke_t37_k2_e5_h40", "permuted"),
    "shifted_weights": ("smoke_t37_k2_e5_h40", "combined"),
    "inclusive_offsets": ("smoke_t37_k2_e5_h40", "offsets"),
}

# evaluated through the whole harness (the suite's time is counted): one per task, the end-to-end path; every
# cheat is run in process (the others' rejection is the same comparison)
THROUGH_THE_HARNESS = ("unstable_order",)


def test_every_cheat_file_has_a_case() -> None:
    assert cheats_of(TASK.id) == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (4-8 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", THROUGH_THE_HARNESS)
def test_moe_permute_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, *CASES[cheat], tmp_path)


@pytest.mark.slow  # kernels under the interpreter, in process (2-7 s on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_each_cheat_breaks_only_the_output_it_is_about(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    """In process, on two shapes: the named output is wrong (exactness broken, or combined >= 10x over its
    bound), the others stay right, and the naive honest_run is right everywhere."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_moe_permute_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_moe_permute_inputs").make_inputs
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_moe_permute_{cheat}")
    names = [o.name for o in TASK.spec.signature.outputs]
    for seed, shape in enumerate(({"T": 37, "K": 2, "E": 5, "H": 40}, {"T": 12, "K": 8, "E": 64, "H": 16}), start=11):
        made = make(shape, seed, "cpu")
        oracle = dict(zip(names, reference.exact(**made), strict=True))
        for label, outputs in (("cheat", module.run(**made)), ("honest", module.honest_run(**made))):
            for name, out in zip(names, outputs, strict=True):
                rule = TASK.spec.tolerance.outputs.get(name, TASK.spec.tolerance)
                result = compare(out, oracle[name], rule)
                wrong = label == "cheat" and name == CASES[cheat][1]
                assert result.ok != wrong, (label, name, shape, result.message)
                if wrong and name == "combined":
                    assert result.rel_err > 10 * (TASK.spec.tolerance.matrix_rel_fro or 0.0)
