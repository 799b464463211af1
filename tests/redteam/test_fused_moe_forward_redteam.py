"""Red-team cases for ``fused_moe_forward``: plausible wrong kernels, each wrong by far, two rejected through the
real harness.

Each cheat in ``fused_moe_forward_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its ``route`` and ``experts`` helpers and kernels available) and evaluated on the CPU:

* ``weights_not_renormalised``: the top-K probabilities of the full softmax used as weights. Caught on every
  token: the unchosen experts' probability mass is missing from its row.
* ``kth_choice_dropped``: every token's last choice skipped. Caught on the tokens whose last choice weighs
  most (token by token, ``views = "rows"``).
* ``silu_on_up_half``: the SiLU on the up half and the gate half as the multiplier. Caught on every token.

On the x1000-scaled call the routing becomes nearly one-hot (the logits are scaled too), where the first two
change little; the fresh calls catch them (docs/tolerance-fused_moe_forward.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("fused_moe_forward")
CASES = {
    "weights_not_renormalised": "smoke_decode_t4_e16_k2",
    "kth_choice_dropped": "smoke_decode_t4_e16_k2",
    "silu_on_up_half": "smoke_decode_t4_e16_k2",
}

# evaluated through the whole harness (the suite's time is counted): one per task, the end-to-end path; every
# cheat is run in process (the others' rejection is the same comparison)
THROUGH_THE_HARNESS = ("weights_not_renormalised",)
IN_PROCESS_SHAPES = ({"T": 4, "E": 16, "K": 2, "H": 32, "I": 16}, {"T": 8, "E": 8, "K": 2, "H": 16, "I": 16})


def test_every_cheat_file_has_a_case() -> None:
    assert cheats_of(TASK.id) == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (3-5 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", THROUGH_THE_HARNESS)
def test_fused_moe_forward_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, CASES[cheat], "out", tmp_path)


@pytest.mark.slow  # kernels under the interpreter, in process (1-2 s on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_cheats_are_wrong_by_far_on_the_tokens_they_get_wrong(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    """In process, on two small shapes: the cheat's worst token is >= 10x over the bound, and honest_run passes."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_fused_moe_forward_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_fused_moe_forward_inputs").make_inputs
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_fused_moe_forward_{cheat}")
    rule = TASK.spec.tolerance
    for seed, axes in enumerate(IN_PROCESS_SHAPES, start=21):
        made = make(axes, seed, "cpu")
        want = reference.rows({"out": reference.exact(**made)}, made)["out"]
        wrong = compare(reference.rows({"out": module.run(**made)}, made)["out"], want, rule)
        assert wrong.rel_err > 10 * (rule.matrix_rel_fro or 0.0), (axes, wrong.rel_err)
        honest = compare(reference.rows({"out": module.honest_run(**made)}, made)["out"], want, rule)
        assert honest.ok, (axes, honest.message)
