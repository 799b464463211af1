"""Red team for add_rmsnorm_fp8_quant: wrong kernels the dequantised comparison and the state check reject.

Each cheat in add_rmsnorm_fp8_quant_cheats/ is appended to the honest naive solution (its run renamed
honest_run, its kernels and helpers reused) and evaluated by the real harness on the CPU, on one smoke
workload. The expected failure names the compared value that exposes it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAIVE = REPO / "tests" / "solutions" / "add_rmsnorm_fp8_quant_naive.py"
CHEATS = HERE / "add_rmsnorm_fp8_quant_cheats"

# cheat -> (status, text the failure message holds, the smoke workload it runs on)
CASES: dict[str, tuple[str, str, str]] = {
    # scales read back for the wrong row or group: the per-group view fails (and the whole matrix)
    "transposed_scales": ("incorrect_numerical", "output y", "smoke_m64_n256"),
    # the pre-add input quantised: off by more than the values themselves
    "quantise_x": ("incorrect_numerical", "output y", "smoke_m64_n256"),
    # y and scales right, the residual stream never written back: the state check
    "residual_not_written": ("state_mismatch", "state residual", "smoke_m64_n256"),
    # a mean over the padded block: invisible at N = 256, 1024; the 384-column smoke workload exposes it
    "padded_mean": ("incorrect_numerical", "output y", "smoke_m32_n384"),
}


def cheat_file(cheat: str, tmp_path: Path) -> Path:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (CHEATS / f"{cheat}.py").read_text())
    return path


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in CHEATS.glob("*.py")} == set(CASES)


def test_the_padded_mean_cheat_needs_a_smoke_row_that_is_not_a_power_of_two() -> None:
    task = Catalog(REPO / "tasks", REPO / "guidance").task("add_rmsnorm_fp8_quant")
    widths = [w.axes["N"] for w in task.spec.smoke_workloads]
    assert any(n & (n - 1) for n in widths), widths


@pytest.mark.slow  # every case is a whole evaluation (5-14 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_add_rmsnorm_fp8_quant_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    status, text, workload = CASES[cheat]
    task = Catalog(REPO / "tasks", REPO / "guidance").task("add_rmsnorm_fp8_quant")
    report = evaluate(task, cheat_file(cheat, tmp_path), "cpu", [workload])
    assert report.status == status, f"{report.status}: {report.message}"
    assert report.message.startswith(text) or text in report.message, report.message
