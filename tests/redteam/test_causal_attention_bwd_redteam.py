"""causal_attention_bwd: wrong-softmax-backward cheats, each appended to the honest naive solution.

Each cheat file in causal_attention_bwd_cheats/ is appended to tests/solutions/causal_attention_bwd_naive.py
(its run renamed honest_run), so that the cheat is the only dishonest thing in the file, and evaluated by
the real harness on the CPU on one smoke workload. Every cheat is far outside the tolerance on every
smoke workload where it is wrong (>= 10x: d2k-workbench bench false-failures causal_attention_bwd); the ragged
S = 100 workload is used for the mask, lse and tail cheats (full_blocks_only is right wherever the tile
divides S, as at every registered shape), S = 64 (the quickest) for the others.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog

pytestmark = pytest.mark.slow  # every case is a whole evaluation

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAIVE = REPO / "tests" / "solutions" / "causal_attention_bwd_naive.py"

# cheat -> (the smoke workload it is evaluated on, the output the harness reports first: dq is checked
# first, so a cheat that breaks dq is reported on dq; dq_diagonal_only breaks nothing else)
CASES: dict[str, tuple[str, str]] = {
    "no_delta": ("smoke_b1_h2_s64_d32", "output dq"),
    "block_mask": ("smoke_b1_h3_s100_d64", "output dq"),
    "lse_base2": ("smoke_b1_h3_s100_d64", "output dq"),
    "dq_diagonal_only": ("smoke_b1_h2_s64_d32", "output dq"),
    "full_blocks_only": ("smoke_b1_h3_s100_d64", "output dq"),  # right wherever 32 divides S
}


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in (HERE / "causal_attention_bwd_cheats").glob("*.py")} == set(CASES)


@pytest.mark.parametrize("cheat", sorted(CASES))
def test_causal_attention_bwd_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "causal_attention_bwd_cheats" / f"{cheat}.py").read_text())
    task = Catalog(REPO / "tasks", REPO / "guidance").task("causal_attention_bwd")
    workload, output = CASES[cheat]
    report = evaluate(task, path, "cpu", [workload])
    assert report.status == "incorrect_numerical", f"{report.status}: {report.message}"
    # rows a cheat leaves unwritten keep the harness's poison, which may be NaN: either message rejects it
    rejected = "exceed the tolerance" in report.message or "NaN or Inf" in report.message
    assert output in report.message and rejected, report.message
