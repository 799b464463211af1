"""Red-team cases for ``splitk_gemm``: plausible wrong kernels, each wrong by far,
one rejected through the real harness (the others in process).

Each cheat in ``splitk_gemm_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its ``_matmul_kernel`` and tile sizes available) and evaluated on the CPU:

* ``k_tail_dropped``: split-K over 64-deep splits counted with ``K // 64``: the last, partial split is never
  summed. Caught because no smoke K is a multiple of 64 (96: a third of K missing; 200: 8 columns, >= 19x); right,
  and passing, where it is.
* ``tile_rows_past_m``: split-K partials stored as whole 16-row tiles (rows past M included) into a padded
  workspace that the reduction reads unpadded: the second split's rows are shifted. Caught where M % 16 != 0
  (smoke M = 1 and 13).
* ``weight_transposed``: w read as [K, N] (torch.matmul's right operand) instead of nn.Linear's [N, K]. Caught
  on every shape: each output pairs a row of a with a scrambled column (about 140x the bound).

Reductions through bfloat16 (the partials rounded before the sum) are not among them: they stay within the
bound (docs/tolerance-splitk_gemm.md), so a kernel doing that passes, as it should at this accuracy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("splitk_gemm")

# cheat -> the smoke workload it is evaluated on through the whole harness (one per task, on the cheapest smoke
# workload, where it is wrong); every cheat is run in process below
THROUGH_THE_HARNESS = {"k_tail_dropped": "smoke_m1_k96_n48"}
IN_PROCESS_ONLY = ("tile_rows_past_m", "weight_transposed")


def test_every_cheat_file_is_evaluated() -> None:
    assert cheats_of(TASK.id) == {*THROUGH_THE_HARNESS, *IN_PROCESS_ONLY}


@pytest.mark.slow  # a whole evaluation each (3-5 s on an idle 2-core CPU)
@pytest.mark.parametrize(("cheat", "workload"), sorted(THROUGH_THE_HARNESS.items()))
def test_splitk_gemm_cheat_rejected_on_cpu(cheat: str, workload: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, workload, "c", tmp_path)


# in process: two shapes, the first ragged in M and K (every cheat wrong there), the second with M % 16 == 0 and
# K % 64 == 0, where the K-tail and padded-rows cheats are honest (why no smoke workload has both)
SHAPES = ({"M": 13, "K": 200, "N": 48}, {"M": 16, "K": 128, "N": 64})
HONEST_ON_THE_SECOND = {"k_tail_dropped", "tile_rows_past_m"}


@pytest.mark.slow  # kernels under the interpreter, in process (~1 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted({*THROUGH_THE_HARNESS, *IN_PROCESS_ONLY}))
def test_cheats_are_wrong_by_far_on_fresh_inputs(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    """The cheat is >= 10x over the bound where it is wrong and passes where its bug does not show; its honest_run
    passes everywhere."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_splitk_gemm_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_splitk_gemm_inputs").make_inputs
    rule = TASK.spec.tolerance
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_splitk_gemm_{cheat}")
    for index, shape in enumerate(SHAPES):
        made = make(shape, 31 + index, "cpu")
        want = reference.exact(**made)
        cheat_err = compare(module.run(**made), want, rule).rel_err / (rule.matrix_rel_fro or 1.0)
        honest_err = compare(module.honest_run(**made), want, rule).rel_err / (rule.matrix_rel_fro or 1.0)
        if index and cheat in HONEST_ON_THE_SECOND:
            assert cheat_err < 1, (shape, cheat_err)
        else:
            assert cheat_err > 10, (shape, cheat_err)
        assert honest_err < 0.5, (shape, honest_err)
