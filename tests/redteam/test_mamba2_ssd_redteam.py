"""Red-team cases for ``mamba2_ssd``: plausible wrong kernels, each wrong by far,
one rejected through the real harness (the others in process).

Each cheat in ``mamba2_ssd_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its ``decays`` and ``scan`` available) and evaluated on the CPU:

* ``state_not_passed``: the scan restarted from zero every 16 steps (chunks without state passing). Caught
  on the tokens after the first chunk and on final_state (heads with long memory).
* ``segsum_off_by_one``: every input decayed by its own step too (the cumulative sum taken one step early).
  Caught on final_state and on the tokens of the fast-decaying heads.
* ``d_skip_dropped``: y without D x. Caught on every token.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("mamba2_ssd")
CASES = {
    "state_not_passed": ("smoke_b2_t40", "y"),
    "segsum_off_by_one": ("smoke_b2_t40", "y"),
    "d_skip_dropped": ("smoke_b2_t40", "y"),
}

# evaluated through the whole harness (the suite's time is counted): one per task, the end-to-end path; every
# cheat is run in process (the others' rejection is the same comparison)
THROUGH_THE_HARNESS = ("state_not_passed",)


def test_every_cheat_file_has_a_case() -> None:
    assert cheats_of(TASK.id) == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (a few seconds each on a 2-core CPU)
@pytest.mark.parametrize("cheat", THROUGH_THE_HARNESS)
def test_mamba2_ssd_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    workload, output = CASES[cheat]
    assert_rejected(TASK, cheat, workload, output, tmp_path)


@pytest.mark.slow  # kernels under the interpreter, in process (about 1 s a call on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_cheats_are_wrong_by_far(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    """In process, on the first smoke shape: the cheat's worst matrix (over y and final_state) is >= 5x over the bound, and
    honest_run passes."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_mamba2_ssd_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_mamba2_ssd_inputs").make_inputs
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_mamba2_ssd_{cheat}")
    rule = TASK.spec.tolerance
    for seed, workload in enumerate(TASK.spec.smoke_workloads[:1], start=21):
        made = make(workload.axes, seed, "cpu")
        want = reference.exact(**made)
        wrong = [compare(got, w, rule).rel_err for got, w in zip(module.run(**made), want, strict=True)]
        assert max(wrong) > 5 * (rule.matrix_rel_fro or 0.0), (workload.name, wrong)
        honest = [compare(got, w, rule) for got, w in zip(module.honest_run(**made), want, strict=True)]
        assert all(h.ok for h in honest), (workload.name, [h.message for h in honest])
