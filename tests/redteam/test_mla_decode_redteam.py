"""mla_decode: wrong-math and wrong-dataflow cheats, each rejected by the real harness on the CPU.

Each cheat in mla_decode_cheats/ is appended to the honest naive solution
(tests/solutions/mla_decode_naive.py, its run renamed honest_run), so that the cheat is the only
dishonest thing in the file: a softmax scale without the rope dimensions, scores without the rope
part, w_uk applied from the wrong side, and a split-KV design that keeps only the last split instead
of merging by log-sum-exp. Each fails the per-sequence rule by 4.7x or more on every call
(docs/tolerance-mla_decode.md), so one smoke workload is enough.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.harness.protocol.report import EvalReport

pytestmark = pytest.mark.slow  # every case is a whole evaluation (5-10 s each on a 2-core CPU)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAIVE = REPO / "tests" / "solutions" / "mla_decode_naive.py"
WORKLOAD = "smoke_b2_l96_h8"

# cheat -> (expected status, text the message must contain)
CASES: dict[str, tuple[str, str]] = {
    "scale_without_rope_dims": ("incorrect_numerical", "output o"),
    "latent_only_scores": ("incorrect_numerical", "output o"),
    "w_uk_transposed": ("incorrect_numerical", "output o"),
    "last_split_only": ("incorrect_numerical", "output o"),
}


def evaluate_cheat(cheat: str, tmp_path: Path) -> EvalReport:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "mla_decode_cheats" / f"{cheat}.py").read_text())
    task = Catalog(REPO / "tasks", REPO / "guidance").task("mla_decode")
    return evaluate(task, path, "cpu", [WORKLOAD])


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in (HERE / "mla_decode_cheats").glob("*.py")} == set(CASES)


@pytest.mark.parametrize("cheat", sorted(CASES))
def test_mla_decode_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    status, text = CASES[cheat]
    report = evaluate_cheat(cheat, tmp_path)
    assert report.status == status, f"{report.status}: {report.message}"
    assert text in report.message, report.message
