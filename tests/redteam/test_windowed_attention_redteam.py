"""windowed_attention: wrong-mask and fixed-pattern cheats, each rejected by the real harness on the CPU.

Each cheat in windowed_attention_cheats/ is appended to the honest naive solution
(tests/solutions/windowed_attention_naive.py, its run renamed honest_run), so that the cheat is the only
dishonest thing in the file. The row-by-row rule (views = "rows") catches a mask that is wrong for a few
keys per query: the smoke windows are short (72, 64) and about one key in 256 is heavy, so a key let in
at the window's edge, across a document boundary or past the diagonal moves whole rows. The
sorted-documents cheat would pass only if every sequence of every call drew its documents in ascending
order (1 in 24 per sequence with four documents, 2 sequences, 4 calls: never in practice).
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
NAIVE = REPO / "tests" / "solutions" / "windowed_attention_naive.py"
WINDOW = "smoke_b2_h2_s176_d64_w72"
DOCS = "smoke_b2_h1_s128_d32_docs4"
DOCS_AND_WINDOW = "smoke_b2_h2_s144_d32_w64_docs3"

# cheat -> (workload it is evaluated on, expected status, text the message must contain)
CASES: dict[str, tuple[str, str, str]] = {
    "no_window": (WINDOW, "incorrect_numerical", "output o"),
    "window_off_by_one": (WINDOW, "incorrect_numerical", "output o"),
    "partial_as_full": (WINDOW, "incorrect_numerical", "output o"),
    "no_documents": (DOCS_AND_WINDOW, "incorrect_numerical", "output o"),
    "sorted_documents": (DOCS, "incorrect_numerical", "output o"),
}


def evaluate_cheat(cheat: str, workload: str, tmp_path: Path) -> EvalReport:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "windowed_attention_cheats" / f"{cheat}.py").read_text())
    task = Catalog(REPO / "tasks", REPO / "guidance").task("windowed_attention")
    return evaluate(task, path, "cpu", [workload])


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in (HERE / "windowed_attention_cheats").glob("*.py")} == set(CASES)


@pytest.mark.parametrize("cheat", sorted(CASES))
def test_windowed_attention_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    workload, status, text = CASES[cheat]
    report = evaluate_cheat(cheat, workload, tmp_path)
    assert report.status == status, f"{report.status}: {report.message}"
    assert text in report.message, report.message
