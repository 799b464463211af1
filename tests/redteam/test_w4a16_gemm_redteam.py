"""Red-team cases for ``w4a16_gemm``: plausible wrong int4 kernels, each rejected by the real harness.

Each cheat in ``w4a16_gemm_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``, its ``matmul`` helper available) and evaluated on the CPU under the interpreter:

* ``group64``: scales and zero points of group ``k // 64`` (a group size of 64). Caught because the
  scales and zero points differ from group to group (inputs.py quantises each group on its own range).
* ``no_zeros``: zero points ignored, every group dequantised as ``(q - 8) * s``. Caught because the
  heavy-tailed weights spread the zero points over most of [0, 15].
* ``row0_only``: a GEMV that only handles M = 1 (every row computed from row 0 of x). Caught on the
  smoke workloads with M > 1; right, and passing, where M = 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAIVE = REPO / "tests" / "solutions" / "w4a16_gemm_naive.py"
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("w4a16_gemm")

# cheat -> the smoke workload it is evaluated on (one is enough: what is wrong does not depend on the size)
CASES = {"group64": "smoke_m3_n64_k256", "no_zeros": "smoke_m3_n64_k256", "row0_only": "smoke_m3_n64_k256"}


def cheat_file(cheat: str, tmp_path: Path) -> Path:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "w4a16_gemm_cheats" / f"{cheat}.py").read_text())
    return path


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in (HERE / "w4a16_gemm_cheats").glob("*.py")} == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (5-14 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_w4a16_gemm_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    report = evaluate(TASK, cheat_file(cheat, tmp_path), "cpu", [CASES[cheat]])
    assert report.status == "incorrect_numerical", f"{report.status}: {report.message}"
    assert "output y" in report.message


def test_cheats_are_wrong_by_far_on_fresh_inputs(tmp_path: Path) -> None:
    """In process, on a few seeds: every cheat is >= 10x over the bound where it is wrong, and the
    M = 1-only cheat is honest on M = 1 (why the smoke workloads include M > 1)."""
    from workbench.harness.checker.compare import compare
    from workbench.harness.solution import interpreter_fix

    ref = import_file(TASK.file("reference.py"), "_rt_w4a16_reference")
    inputs = import_file(TASK.file("inputs.py"), "_rt_w4a16_inputs")
    tol = TASK.spec.tolerance
    assert tol.matrix_rel_fro is not None
    uninstall = interpreter_fix.install()
    try:
        for cheat in sorted(CASES):
            module = import_file(cheat_file(cheat, tmp_path), f"_rt_w4a16_{cheat}")
            for axes, seed in (({"M": 3, "N": 64, "K": 256}, 11), ({"M": 1, "N": 32, "K": 384}, 12)):
                d = inputs.make_inputs(axes, seed, "cpu")
                result = compare(module.run(**d), ref.exact(**d), tol)
                if cheat == "row0_only" and axes["M"] == 1:
                    assert result.ok, result.message
                else:
                    assert result.rel_err > 10 * tol.matrix_rel_fro, (cheat, axes, result.rel_err)
                honest = compare(module.honest_run(**d), ref.exact(**d), tol)
                assert honest.ok and honest.rel_err < 0.5 * tol.matrix_rel_fro, (cheat, honest.message)
    finally:
        uninstall()
