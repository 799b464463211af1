"""Red-team cases for ``gated_deltanet``: plausible wrong kernels, each wrong by far,
one rejected through the real harness (the others in process).

Each cheat in ``gated_deltanet_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its ``_recurrent_kernel`` available) and evaluated on the CPU:

* ``beta_on_v_only``: beta scales the written value but not the erasure (``I - k k^T``: complete forgetting
  along every key). Caught on every head, o and the final state alike.
* ``state_not_carried``: every chunk of 16 tokens starts from a zero state (a chunked kernel whose state pass
  drops the carry). Caught on the slowly decaying heads (every call with two heads or more has one).
* ``decay_between_chunks_only``: the decay applied to the state entering each chunk, none inside it. Caught on
  the fast heads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("gated_deltanet")
CASES = {
    "beta_on_v_only": "smoke_b1_h2_t40_d16",
    "state_not_carried": "smoke_b1_h2_t40_d16",
    "decay_between_chunks_only": "smoke_b1_h2_t40_d16",
}

# evaluated through the whole harness (the suite's time is counted): one per task, the end-to-end path; every
# cheat is run in process (the others' rejection is the same comparison)
THROUGH_THE_HARNESS = ("beta_on_v_only",)


def test_every_cheat_file_has_a_case() -> None:
    assert cheats_of(TASK.id) == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (about 6 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", THROUGH_THE_HARNESS)
def test_gated_deltanet_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, CASES[cheat], "o", tmp_path)


@pytest.mark.slow  # kernels under the interpreter, in process (four calls, 2-3 s on a 2-core CPU)
def test_cheats_are_wrong_by_far(tmp_path: Path, interpreter_fixed: None) -> None:
    """In process, on the first smoke shape: each cheat's worst matrix (o or final_state) is >= 8x over the
    bound, and honest_run passes (once: it is the same naive solution in every assembled file)."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_gated_deltanet_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_gated_deltanet_inputs").make_inputs
    rule = TASK.spec.tolerance
    made = make(TASK.spec.smoke_workloads[0].axes, 31, "cpu")
    want = reference.exact(**made)
    for cheat in sorted(CASES):
        module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_gated_deltanet_{cheat}")
        wrong = [compare(out, exact, rule) for out, exact in zip(module.run(**made), want, strict=True)]
        assert max(w.rel_err for w in wrong) > 8 * (rule.matrix_rel_fro or 0.0), (cheat, [w.rel_err for w in wrong])
    honest = [compare(out, exact, rule) for out, exact in zip(module.honest_run(**made), want, strict=True)]
    assert all(h.ok for h in honest), [h.message for h in honest]
