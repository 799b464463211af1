"""paged_gqa_decode: wrong-mask, wrong-address, wrong-head and wrong-merge cheats, each rejected by the real
harness on the CPU.

Each cheat in paged_gqa_decode_cheats/ is appended to the honest naive solution
(tests/solutions/paged_gqa_decode_naive.py, its run renamed honest_run), so that the cheat is the only
dishonest thing in the file. Each would pass on inputs the generator never makes: ignore_seq_lens if every
sequence had the longest length, identity_pages if the page table were arange (pages handed out in order),
gqa_modulo if the query heads of a group were identical, last_split_only if the first half of every
sequence carried no weight, page_multiple_lens if lengths were multiples of 16. The task's inputs have
ragged lengths in [L / 2, L], a random permutation of pages and stale data in every slot no sequence owns
(checked in tests/test_paged_gqa_decode.py), and the per-sequence tolerance fails the call as soon as one
sequence is read wrongly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.harness.protocol.report import EvalReport

pytestmark = pytest.mark.slow  # every case is a whole evaluation (4-8 s each on a 2-core CPU)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAIVE = REPO / "tests" / "solutions" / "paged_gqa_decode_naive.py"
WORKLOAD = "smoke_b4_hq4_hkv2_d64_l96"  # two KV heads of two query heads each: h % 2 != h // 2 for h = 1, 2

# cheat -> (expected status, text the message must contain)
CASES: dict[str, tuple[str, str]] = {
    "ignore_seq_lens": ("incorrect_numerical", "output o"),
    "identity_pages": ("incorrect_numerical", "output o"),
    "gqa_modulo": ("incorrect_numerical", "output o"),
    "last_split_only": ("incorrect_numerical", "output o"),
    "page_multiple_lens": ("incorrect_numerical", "output o"),
}


def evaluate_cheat(cheat: str, tmp_path: Path) -> EvalReport:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "paged_gqa_decode_cheats" / f"{cheat}.py").read_text())
    task = Catalog(REPO / "tasks", REPO / "guidance").task("paged_gqa_decode")
    return evaluate(task, path, "cpu", [WORKLOAD])


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in (HERE / "paged_gqa_decode_cheats").glob("*.py")} == set(CASES)


@pytest.mark.parametrize("cheat", sorted(CASES))
def test_paged_gqa_decode_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    status, text = CASES[cheat]
    report = evaluate_cheat(cheat, tmp_path)
    assert report.status == status, f"{report.status}: {report.message}"
    assert text in report.message, report.message
