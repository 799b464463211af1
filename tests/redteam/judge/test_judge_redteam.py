"""The judge's red team: decorations that claim the expert design without realising it raise no score.

A naive judge (naive.py) that believes whatever it is shown scores each decorated candidate through the real
prompt and verification: the score must be the undecorated candidate's. The same judge on the raw text is
fooled by every decoration, so each case is a real attack on a judge that reads what the agent wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.judge.prompt import build_input
from workbench.judge.shown import shown_candidate
from workbench.judge.testing import cite
from workbench.judge.verdict import Citation
from workbench.judge.verify import CitedText

from . import cases, naive

REPO = Path(__file__).resolve().parents[3]
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")


@pytest.fixture(scope="module")
def outcomes() -> tuple[cases.Outcome, dict[str, cases.Outcome]]:
    base, each = cases.run_cases(CATALOG)
    return base, {o.case: o for o in each}


def scores(outcome: cases.Outcome) -> dict[str, float | None]:
    return {level: outcome.judged.levels[level].score for level in naive.LEVELS}


@pytest.mark.parametrize("case", [c.name for c in cases.CASES])
def test_a_decoration_raises_no_score(case: str, outcomes: tuple[cases.Outcome, dict[str, cases.Outcome]]) -> None:
    base, each = outcomes
    decorated = each[case]
    assert decorated.judged.complete and not decorated.judged.reasks  # the naive judge's replies verify
    assert scores(decorated) == scores(base)
    assert sum(decorated.raw.values()) > sum(base.raw.values())  # on the raw text the decoration fools it


def test_the_defences_leave_the_code_visible(outcomes: tuple[cases.Outcome, dict[str, cases.Outcome]]) -> None:
    """The undecorated candidate keeps the credit its code earns (tl.dot, the batch in the grid)."""
    base, _ = outcomes
    assert scores(base)["L2"] and scores(base)["L3"]


def test_the_table_in_the_docs_is_the_one_measured() -> None:
    assert cases.table(CATALOG) in (REPO / "docs" / "judge.md").read_text()


def test_a_citation_of_code_that_never_ran_is_refused_naming_it() -> None:
    source = cases.unreachable_kernel(cases.BASE.read_text())
    shown = shown_candidate(source, cases.CASES[0].record())
    [ghost] = shown.hidden
    assert ghost.name.startswith("kernel_") and "never called" in ghost.why
    raw_line = next(n for n, line in enumerate(source.splitlines(), 1) if line.startswith("def _square_side_triangle_kernel("))
    assert ghost.first < raw_line <= ghost.last
    cited = CitedText("solution.py", shown.text, hidden=((ghost.first, ghost.last, ghost.name),))
    citation = Citation(**cite(source, raw_line, 1, "L3.c.triangle_mirrored_diagonal"))
    check = cited.check(citation, ["L3.c.triangle_mirrored_diagonal"], "L3", 1)
    assert not check.ok and any(f"hold {ghost.name}, code that never ran" in e for e in check.errors)


def test_a_kernel_defined_and_named_but_never_launched_is_hidden_only_with_the_record() -> None:
    source = cases.dead_branch(cases.BASE.read_text())
    without = shown_candidate(source, None)  # statically, the branch reaches the kernel
    assert not without.hidden
    shown = shown_candidate(source, cases.CASES[0].record())
    [ghost] = shown.hidden
    assert "never launched" in ghost.why and "square_side" not in shown.text
    assert "No launch record" in without.ran_table and f"{ghost.name}, a Triton function never launched" in shown.ran_table


def test_a_jit_helper_called_by_a_launched_kernel_stays_and_names_stay_consistent() -> None:
    source = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef _helper_square(x):\n    return x * x\n\n\n"
        "@triton.jit\ndef _main_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(y_ptr + offs, _helper_square(tl.load(x_ptr + offs)))\n\n\n"
        "def run(x, steps):\n    y = x.clone()\n    _main_kernel[(1,)](x, y, BLOCK=x.numel(), num_warps=4)\n    return y\n"
    )
    shown = shown_candidate(source, {"w": {"_main_kernel": 1}})
    assert not shown.hidden
    assert len(shown.text.splitlines()) == len(source.splitlines())
    compile(shown.text, "shown.py", "exec")  # still Python
    assert "def run(x, steps):" in shown.text and "tl.arange(0, CONST_1)" in shown.text  # run, its parameters, tl
    assert "kernel_2[(1,)](x, y, CONST_1=x.numel(), num_warps=4)" in shown.text  # a kernel's parameter, renamed alike
    assert "def kernel_1(x):\n    return x * x" in shown.text and "kernel_1(tl.load(var_1 + var_3))" in shown.text
    assert shown.names == {"_helper_square": "kernel_1", "_main_kernel": "kernel_2", "x_ptr": "var_1", "y_ptr": "var_2",
                           "BLOCK": "CONST_1", "offs": "var_3"}  # fmt: skip


def test_the_prompt_shows_the_launch_record_with_the_shown_names() -> None:
    task, guidance, rubric = CATALOG.task(cases.TASK), CATALOG.guidance(cases.TASK), CATALOG.rubric(cases.TASK)
    assert guidance is not None and rubric is not None
    judge_input = build_input(
        "impl", task, guidance, rubric, rev=2, sha="0" * 40, file="solution.py", text=cases.BASE.read_text(),
        expert_source=cases.EXPERT.read_text(), launched=cases.CASES[0].record(),
    )  # fmt: skip
    assert "- smoke_b8_m64_n200: kernel_1 x1, kernel_2 x1, kernel_3 x15" in judge_input.user
    assert "_bmm_kernel" not in judge_input.user.split("<candidate")[1]


@pytest.mark.slow  # a whole CPU evaluation (about 15 s on a 2-core CPU)
def test_a_real_evaluation_records_that_the_ghost_kernels_never_launched(tmp_path: Path, tiny_tasks: Path) -> None:
    branch = cases.dead_branch(cases.BASE.read_text())  # its kernel renamed: two ghost kernels, one in a dead branch
    branch = branch.replace("_square_side_triangle_kernel", "_ghost_kernel")
    source = cases.unreachable_kernel(branch)
    solution = tmp_path / "solution.py"
    solution.write_text(source)
    report = evaluate(Catalog(tiny_tasks, REPO / "guidance").task(cases.TASK), solution, "cpu")
    assert report.status == "passed", report.message
    record = {w.name: w.kernels for w in report.workloads}
    assert all(kernels == cases.BASE_RECORD for kernels in record.values())
    shown = shown_candidate(source, record)
    assert {h.why.split(":")[0] for h in shown.hidden} == {
        "a Triton function never launched at any workload, nor called by a launched kernel",
        "never called",
    }
