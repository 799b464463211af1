"""Scores count a skipped evaluation apart from failures (issue 55): a workload the GPU could not hold takes no
part in its revision's speedup, and a task whose evaluation was skipped as a whole is neither correct nor
failed. Latencies in ms as (candidate, reference):

| model   | task | final evaluation                                   | counts as                        |
|---------|------|----------------------------------------------------|----------------------------------|
| model-a | muon | W1 (2,4) W2 (1,2): passed, 2.0x                    | correct, 2.0                     |
| model-a | toy  | v1 skipped: the evaluation is skipped              | skipped (in no figure)           |
| model-b | muon | W1 (1,4) passed, W2 skipped: passed                | correct, 4.0 (W1 alone)          |
| model-b | toy  | v1 incorrect_numerical                             | failed, 0.5                      |
"""

from __future__ import annotations

import pytest

from workbench.scoring import build_results, build_tables, collect
from workbench.scoring.results import Results
from workbench.scoring.termcharts import task_bars
from workbench.scoring.testing import Step, scored_session, timed, verdict

from .conftest import MUON, TOY, W1, W2, when


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    root = tmp_path_factory.mktemp("skipped") / "sessions"
    root.mkdir()
    sessions = [
        ("model-a", MUON, timed(MUON, {W1: (2, 4), W2: (1, 2)})),
        ("model-a", TOY, timed(TOY, {"v1": (1, 1)}, skipped=["v1"])),
        ("model-b", MUON, timed(MUON, {W1: (1, 4), W2: (1, 1)}, skipped=[W2])),
        ("model-b", TOY, timed(TOY, {"v1": (1, 1)}, status="incorrect_numerical")),
    ]
    for minute, (model, task, report) in enumerate(sessions):
        scored_session(
            root, task, [Step(1, report)], model=model, created=when(minute), session_id=f"{model}-{task}",
            verdicts=[(1, verdict(0, 0, 0))] if report.status != "passed" else [],
        )  # fmt: skip
    return build_results(collect([root]).records)


def test_the_harness_reports_of_the_table() -> None:
    assert timed(TOY, {"v1": (1, 1)}, skipped=["v1"]).status == "skipped"
    assert timed(MUON, {W1: (1, 4), W2: (1, 1)}, skipped=[W2]).status == "passed"


def test_a_skipped_workload_takes_no_part_in_the_task_speedup(results: Results) -> None:
    cell = results.cell("model-b", "none", MUON)
    assert cell is not None and cell.correct and cell.speedup == pytest.approx(4.0)
    assert [(w.name, w.status, w.speedup) for w in cell.workloads] == [(W1, "passed", pytest.approx(4.0)), (W2, "skipped", None)]
    assert results.provenance.timed_sessions >= 2  # the revision with a skipped workload is still timed


def test_a_skipped_task_is_neither_correct_nor_failed(results: Results) -> None:
    skipped = results.cell("model-a", "none", TOY)
    assert skipped is not None and skipped.skipped and not skipped.correct and skipped.status == "skipped"
    assert skipped.levels is None and skipped.js_impl is None  # no 0 from the judge either
    failed = results.cell("model-b", "none", TOY)
    assert failed is not None and not failed.skipped and failed.status == "incorrect_numerical"

    a, b = results.group_scores("model-a", "none"), results.group_scores("model-b", "none")
    assert a is not None and b is not None
    assert (a.tasks, a.passed, a.skipped, a.correctness) == (1, 1, 1, 1.0)
    assert a.sperf == pytest.approx(2.0)  # muon alone: the skipped toy is no 0.5 penalty
    assert a.fast_p["1.5"] == 1.0
    assert (b.tasks, b.passed, b.skipped, b.correctness) == (2, 1, 0, 0.5)
    assert b.sperf == pytest.approx(2.25)  # (4.0 + 0.5) / 2: the failure is a failure
    overall = results.overall_for("none")
    assert overall is not None and (overall.pairs, overall.passed, overall.skipped) == (3, 2, 1)
    assert any("1 model-task pair(s) skipped" in note for note in results.notes)


def test_the_tables_and_the_chart_say_skipped(results: Results) -> None:
    tables = {t.id: t for t in build_tables(results)}
    by_task = {row["task"]: row for row in tables["task_speedups"].records()}
    assert by_task[TOY]["model-a[none]"] == "skipped"
    assert by_task[TOY]["model-b[none]"] == "failed (incorrect_numerical)"
    assert any(note.startswith("skipped:") for note in tables["table1"].notes)
    chart = task_bars(results).plain
    assert "skipped: more device memory than the GPU had" in chart and "✗ incorrect_numerical" in chart
