"""Red-team cases for ``gemm_swiglu``: plausible wrong kernels, each wrong by far,
one rejected through the real harness (the others in process).

Each cheat in ``gemm_swiglu_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its ``_matmul_kernel`` and ``_swiglu_kernel`` available) and evaluated on the CPU:

* ``swapped_halves``: silu(u) * g. Caught because g and u are independent projections: the product of
  the wrong activation is 37-120x over the bound (docs/tolerance-gemm_swiglu.md).
* ``interleaved_rows``: the weight read as interleaved gate/up rows (another framework's layout). Caught
  because the rows of w are independent: half of every output pairs the wrong rows.
* ``k_tail_dropped``: a K loop without its tail (K rounded down to the 32-deep tile). Caught on the smoke
  workload with K = 80, where a fifth of every dot product is missing; right, and passing, where K % 32 == 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("gemm_swiglu")

# cheat -> the smoke workload it is evaluated on (where it is wrong)
CASES = {"swapped_halves": "smoke_m64_k128_i96", "interleaved_rows": "smoke_m64_k128_i96", "k_tail_dropped": "smoke_m37_k80_i40"}

# evaluated through the whole harness (the suite's time is counted): one per task, the end-to-end path; every
# cheat is run in process (the others' rejection is the same comparison)
THROUGH_THE_HARNESS = ("swapped_halves",)


def test_every_cheat_file_has_a_case() -> None:
    assert cheats_of(TASK.id) == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (3-5 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", THROUGH_THE_HARNESS)
def test_gemm_swiglu_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, CASES[cheat], "y", tmp_path)


@pytest.mark.slow  # kernels under the interpreter, in process (2-7 s on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_cheats_are_wrong_by_far_on_fresh_inputs(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    """In process, on two shapes: the cheat is >= 10x over the bound where it is wrong (the K-tail cheat is
    honest where K is a multiple of its tile: why a smoke workload has K = 80), and its honest_run passes."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_gemm_swiglu_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_gemm_swiglu_inputs").make_inputs
    bound = TASK.spec.tolerance.matrix_rel_fro or 0.0
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_gemm_swiglu_{cheat}")
    for seed, shape in enumerate(({"M": 37, "K": 80, "I": 40}, {"M": 48, "K": 64, "I": 64}), start=11):
        made = make(shape, seed, "cpu")
        oracle = reference.exact(**made)
        wrong = compare(module.run(**made), oracle, TASK.spec.tolerance)
        tail_only = cheat == "k_tail_dropped" and shape["K"] % 32 == 0
        assert wrong.ok if tail_only else wrong.rel_err > 10 * bound, (shape, wrong.rel_err)
        assert compare(module.honest_run(**made), oracle, TASK.spec.tolerance).rel_err < 0.5 * bound
