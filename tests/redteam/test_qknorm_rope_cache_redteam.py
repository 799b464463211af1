"""qknorm_rope_cache: wrong-math and wrong-index cheats, each rejected by the real harness on the CPU.

Each cheat in qknorm_rope_cache_cheats/ is appended to the honest naive solution
(tests/solutions/qknorm_rope_cache_naive.py, its run renamed honest_run), so that the cheat is the only
dishonest thing in the file. The index cheats (cos/sin by token index, slots in token order) would pass
on inputs where positions or slot_mapping happen to be arange(T); the task's inputs never are (a mixed
decode + prefill batch at random offsets with a random block table, checked in
tests/test_qknorm_rope_cache.py), so the hidden-seed calls catch them. The per-slot k_cache rule and the
bit-exact v_cache rule catch a cache written in the wrong place or with the wrong values.
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
NAIVE = REPO / "tests" / "solutions" / "qknorm_rope_cache_naive.py"
WORKLOAD = "smoke_t24_hq4_hkv2_d64"

# cheat -> (expected status, text the message must contain)
CASES: dict[str, tuple[str, str]] = {
    "positions_as_index": ("incorrect_numerical", "output q_out"),
    "gptj_interleaved": ("incorrect_numerical", "output q_out"),
    "norm_all_heads": ("incorrect_numerical", "output q_out"),
    "contiguous_slots": ("state_mismatch", "_cache after the call"),
    "v_normalised": ("state_mismatch", "state v_cache"),
}


def evaluate_cheat(cheat: str, tmp_path: Path) -> EvalReport:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "qknorm_rope_cache_cheats" / f"{cheat}.py").read_text())
    task = Catalog(REPO / "tasks", REPO / "guidance").task("qknorm_rope_cache")
    return evaluate(task, path, "cpu", [WORKLOAD])


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in (HERE / "qknorm_rope_cache_cheats").glob("*.py")} == set(CASES)


@pytest.mark.parametrize("cheat", sorted(CASES))
def test_qknorm_rope_cache_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    status, text = CASES[cheat]
    report = evaluate_cheat(cheat, tmp_path)
    assert report.status == status, f"{report.status}: {report.message}"
    assert text in report.message, report.message
