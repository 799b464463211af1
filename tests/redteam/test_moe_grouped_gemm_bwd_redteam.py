"""Red-team cases for ``moe_grouped_gemm_bwd``: plausible wrong kernels, each wrong by far, two rejected through
the real harness.

Each cheat in ``moe_grouped_gemm_bwd_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its kernels and constants available) and evaluated on the CPU:

* ``boundary_off_by_one``: every group boundary read one row late: each expert's first row served by the
  expert before it. Caught on both outputs: that row's token has one contribution with the wrong ``w``
  (``dx`` per token), and two experts' ``dw`` each lose or gain a row.
* ``dx_first_slot_only``: ``dx[t]`` takes one of the token's ``K`` rows instead of their sum. Caught on every
  token's ``dx``.
* ``dw_ragged_tail_dropped``: ``dw`` reduces each expert's rows in whole chunks only, dropping the ragged
  end. Caught on ``dw`` for every expert whose row count is not a multiple of the chunk (in process only).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("moe_grouped_gemm_bwd")
# cheat -> (the smoke workload it is evaluated on, the outputs it gets wrong; the harness names the first)
CASES = {
    "boundary_off_by_one": ("smoke_t20_k2_e5", ("dx", "dw")),
    "dx_first_slot_only": ("smoke_t20_k2_e5", ("dx",)),
    "dw_ragged_tail_dropped": ("smoke_t20_k2_e5", ("dw",)),
}

# evaluated through the whole harness (the suite's time is counted): one per task, the end-to-end path; every
# cheat is run in process (the others' rejection is the same comparison)
THROUGH_THE_HARNESS = ("boundary_off_by_one",)


def test_every_cheat_file_has_a_case() -> None:
    assert cheats_of(TASK.id) == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (3-6 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", THROUGH_THE_HARNESS)
def test_moe_grouped_gemm_bwd_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    workload, wrong = CASES[cheat]
    assert_rejected(TASK, cheat, workload, wrong[0], tmp_path)


@pytest.mark.slow  # kernels under the interpreter, in process (1-2 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_each_cheat_breaks_its_outputs_by_far(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    """In process, on one smoke shape (the false-failure script covers many seeds and shapes): each output the
    cheat is about is >= 10x over its bound on its worst matrix, the other stays right, and honest_run passes."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_moe_grouped_gemm_bwd_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_moe_grouped_gemm_bwd_inputs").make_inputs
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_moe_grouped_gemm_bwd_{cheat}")
    rule = TASK.spec.tolerance
    bound = rule.matrix_rel_fro or 0.0
    made = make(TASK.spec.smoke_workloads[0].axes, 31, "cpu")
    oracle = reference.per_token(dict(zip(("dx", "dw"), reference.exact(**made), strict=True)), made)
    for label, outputs in (("cheat", module.run(**made)), ("honest", module.honest_run(**made))):
        got = reference.per_token(dict(zip(("dx", "dw"), outputs, strict=True)), made)
        for name in ("dx", "dw"):
            result = compare(got[name], oracle[name], rule)
            wrong = label == "cheat" and name in CASES[cheat][1]
            assert result.ok != wrong, (label, name, result.message)
            if wrong:
                assert result.rel_err > 10 * bound, (name, result.rel_err)
