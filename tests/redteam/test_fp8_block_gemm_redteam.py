"""fp8_block_gemm: wrong-scale and skipped-K cheats, each appended to the honest naive solution.

Each cheat file in fp8_block_gemm_cheats/ is appended to tests/solutions/fp8_block_gemm_naive.py (its run
renamed honest_run), so that the cheat is the only dishonest thing in the file, and evaluated by the real
harness on the CPU on one smoke workload that the generator's inputs make it fail on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog

pytestmark = pytest.mark.slow  # every case is a whole evaluation

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAIVE = REPO / "tests" / "solutions" / "fp8_block_gemm_naive.py"

# cheat -> the smoke workload it is evaluated on: even_k_blocks needs an odd number of K blocks, and
# first_n_block_scale three weight-block rows (with two, its error was down to 5x the bound in 110 calls;
# with three, 14x: d2k-workbench bench false-failures fp8_block_gemm)
CASES: dict[str, str] = {
    "first_k_scale": "smoke_m64_n256_k256",
    "first_n_block_scale": "smoke_m72_n384_k384",
    "even_k_blocks": "smoke_m72_n384_k384",
}


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in (HERE / "fp8_block_gemm_cheats").glob("*.py")} == set(CASES)


@pytest.mark.parametrize("cheat", sorted(CASES))
def test_fp8_block_gemm_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "fp8_block_gemm_cheats" / f"{cheat}.py").read_text())
    task = Catalog(REPO / "tasks", REPO / "guidance").task("fp8_block_gemm")
    report = evaluate(task, path, "cpu", [CASES[cheat]])
    assert report.status == "incorrect_numerical", f"{report.status}: {report.message}"
    # values a cheat leaves unwritten keep the harness's poison, which may be NaN: either message rejects it
    rejected = "exceed the tolerance" in report.message or "NaN or Inf" in report.message
    assert "output C" in report.message and rejected, report.message
