"""Scoring the synthetic benchmark of conftest.py: every number below is computed by hand from its table."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from workbench import paths
from workbench.catalog import Catalog
from workbench.errors import UsageError
from workbench.scoring import build_results, collect, session_curve
from workbench.scoring.records import SessionRecord
from workbench.scoring.results import Results
from workbench.scoring.testing import Step, scored_session, timed

from .conftest import MUON, TOY, W1, W2, when

CATALOG = Catalog(paths.REPO_ROOT / "tasks", paths.REPO_ROOT / "guidance")


@pytest.fixture(scope="module")
def records(bench_root: Path) -> list[SessionRecord]:
    return collect([bench_root]).records


@pytest.fixture(scope="module")
def results(records: list[SessionRecord]) -> Results:
    return build_results(records, catalog=CATALOG)


def test_groups_tasks_and_configurations(results: Results) -> None:
    assert results.tasks == [MUON, TOY]
    assert results.configs == ["none", "L1"]  # the design proposal is no configuration
    assert [g.label for g in results.groups] == ["model-a", "model-b"]
    assert [(s.group, s.config) for s in results.scores] == [("model-a", "none"), ("model-a", "L1"), ("model-b", "none")]
    assert results.provenance.device_model == "NVIDIA H200"
    assert len(results.provenance.sessions) == 7


def test_task_speedups_and_a_task_with_one_failing_workload(results: Results) -> None:
    a_muon = results.cell("model-a", "none", MUON)
    assert a_muon is not None and a_muon.correct and a_muon.rev == 3
    assert [w.speedup for w in a_muon.workloads] == [pytest.approx(2.0), pytest.approx(8.0)]  # 4/2, 8/1
    assert a_muon.speedup == pytest.approx(4.0)  # sqrt(2 * 8)
    # toy: v1 passed and was 2x faster, v2 incorrect: the task failed, and has no speedup
    a_toy = results.cell("model-a", "none", TOY)
    assert a_toy is not None and not a_toy.correct and a_toy.status == "incorrect_numerical" and a_toy.speedup is None
    assert results.cell("model-a", "L1", MUON).speedup == pytest.approx(math.sqrt(32))  # type: ignore[union-attr]


def test_correctness_and_performance_score(results: Results) -> None:
    a, b = results.group_scores("model-a", "none"), results.group_scores("model-b", "none")
    assert a is not None and b is not None
    assert (a.passed, a.tasks, a.correctness) == (1, 2, 0.5)
    assert a.sperf == pytest.approx(2.25)  # (4.0 + 0.5 penalty) / 2
    assert (b.passed, b.correctness) == (2, 1.0)
    assert b.sperf == pytest.approx(1.25)  # (1.0 + 1.5) / 2
    none = results.overall_for("none")
    assert none is not None
    assert (none.passed, none.pairs, none.correctness) == (3, 4, 0.75)
    assert none.sperf == pytest.approx(math.sqrt(2.25 * 1.25))  # geometric mean over the models
    l1 = results.group_scores("model-a", "L1")
    assert l1 is not None and l1.sperf == pytest.approx((math.sqrt(32) + 3.0) / 2)


def test_geomean_speedup_only_for_models_correct_everywhere(records: list[SessionRecord], results: Results) -> None:
    assert results.group_scores("model-b", "none").geomean_speedup == pytest.approx(math.sqrt(1.5))  # type: ignore[union-attr]
    assert results.group_scores("model-a", "none").geomean_speedup is None  # type: ignore[union-attr]
    # model-b ran no L1 sessions, model-a failed toy unguided: no model is correct in every configuration
    assert results.overall_for("none").fully_correct == []  # type: ignore[union-attr]
    assert results.overall_for("none").geomean_speedup is None  # type: ignore[union-attr]
    unguided = build_results(records, configs=["none"])
    assert unguided.overall_for("none").fully_correct == ["model-b"]  # type: ignore[union-attr]
    assert unguided.overall_for("none").geomean_speedup == pytest.approx(math.sqrt(1.5))  # type: ignore[union-attr]


def test_fast_p_over_all_tasks(results: Results) -> None:
    a, b = results.group_scores("model-a", "none"), results.group_scores("model-b", "none")
    assert a is not None and b is not None
    # model-a: muon 4.0x above 1, 1.5 and 2; the failed toy (fast, but incorrect) counts in the denominator
    assert a.fast_p == {"1": 0.5, "1.5": 0.5, "2": 0.5}
    # model-b: 1.0x is not above 1; 1.5x is above 1 but not above 1.5
    assert b.fast_p == {"1": 0.5, "1.5": 0.0, "2": 0.0}
    assert results.overall_for("none").fast_p == {"1": 2 / 4, "1.5": 1 / 4, "2": 1 / 4}  # type: ignore[union-attr]


def test_judge_scores(results: Results) -> None:
    a, b = results.group_scores("model-a", "none"), results.group_scores("model-b", "none")
    assert a is not None and b is not None
    # model-a: muon (60, 70, 80 -> L3 reviewed to 50) = 60; toy failed = 0 -> (60 + 0) / 2 = 30
    assert results.cell("model-a", "none", MUON).js_impl == pytest.approx(60.0)  # type: ignore[union-attr]
    assert results.cell("model-a", "none", TOY).js_impl == 0.0  # type: ignore[union-attr]
    assert a.js_impl == pytest.approx(30.0) and a.judged == 2
    assert a.levels == {"L1": 30.0, "L2": 35.0, "L3": 25.0}
    # model-b: muon has an invalid L2 (no JS), toy 90 -> JS_impl 90 over 1 judged task; level means where valid
    assert b.js_impl == pytest.approx(90.0) and b.judged == 1
    assert b.levels == {"L1": 70.0, "L2": 90.0, "L3": 65.0}
    # no verdict at all in model-a's L1 sessions: not judged (not zero)
    l1 = results.group_scores("model-a", "L1")
    assert l1 is not None and l1.js_impl is None and l1.judged == 0
    (design,) = results.design
    assert (design.group, design.js_design, design.judged) == ("model-a", pytest.approx(50.0), 1)


def test_tokens_per_configuration(results: Results) -> None:
    row = next(t for t in results.tokens if (t.group, t.config) == ("model-a", "none"))
    t = row.tokens
    # 7 + 5 turns of 100 / 1000 / 10 / 20 / 5 tokens at $0.50
    assert (row.sessions, row.turns, t.calls) == (2, 12, 12)
    assert (t.uncached_input, t.cache_read, t.cache_write, t.output, t.reasoning) == (1200, 12000, 120, 240, 60)
    assert t.cost_usd == pytest.approx(6.0)
    assert any(r.config == "design" for r in results.tokens)


def test_sperf_over_turns(records: list[SessionRecord], results: Results) -> None:
    a = results.group_scores("model-a", "none")
    assert a is not None and a.curve is not None and a.curve.axis == "turn"
    # muon: 2.0 at turn 3, 4.0 at turn 7; toy never eligible: (x + 0.1) / 2
    assert a.curve.points == [(0, pytest.approx(0.1)), (3, pytest.approx(1.05)), (7, pytest.approx(2.05))]
    assert a.curve.value_at(2) == pytest.approx(0.1)  # the fallback, until the first eligible submission
    b = results.group_scores("model-b", "none")
    # muon 1.0 at turn 2, toy 1.5 at turn 4: 0.1, then (1.0 + 0.1) / 2 = 0.55, then (1.0 + 1.5) / 2 = 1.25
    assert b is not None and b.curve is not None
    assert b.curve.points == [(0, pytest.approx(0.1)), (2, pytest.approx(0.55)), (4, pytest.approx(1.25))]
    one = session_curve(next(r for r in records if r.id == "a-none-muon"))
    assert one.points == [(0, 0.1), (3, pytest.approx(2.0)), (7, pytest.approx(4.0))]


def test_roofline_fraction_from_the_task_formulas(results: Results) -> None:
    cell = results.cell("model-a", "none", MUON)
    assert cell is not None
    w1 = cell.workloads[0]
    # B=32, M=2048, N=5464: the floor of any honest design, 6 B M^2 N FLOP (min_flops) at 989 TFLOP/s
    # (H200, fp16), vs 4 B M N bytes at 4.8 TB/s: the floor the harness enforces, so a passing fraction <= 1
    flops = 6 * 32 * 2048 * 2048 * 5464
    nbytes = 4 * 32 * 2048 * 5464
    floor_ms = max(flops / 989e12, nbytes / 4.8e12) * 1e3
    assert w1.roofline_ms == pytest.approx(floor_ms)
    assert w1.roofline_fraction == pytest.approx(floor_ms / 2.0)  # latency 2 ms
    toy = results.cell("model-b", "none", TOY)
    assert toy is not None and toy.workloads[0].roofline_fraction is None  # not in the catalogue
    assert any("toy_task" in note for note in results.notes)


def test_filters(records: list[SessionRecord]) -> None:
    only = build_results(records, tasks=[TOY], models=["MODEL-B"])
    assert only.tasks == [TOY] and [s.group for s in only.scores] == ["model-b"]
    assert only.group_scores("model-b", "none").sperf == pytest.approx(1.5)  # type: ignore[union-attr]
    with pytest.raises(UsageError, match=r"no session of model 'gpt-7' \(known: model-a, model-b\)"):
        build_results(records, models=["gpt-7"])
    with pytest.raises(UsageError, match="guidance configuration 'L1\\+L2'"):
        build_results(records, configs=["L1+L2"])
    with pytest.raises(UsageError, match="device model matching 'B200'"):
        build_results(records, device_model="B200")
    assert build_results(records, device_model="h200").provenance.device_model == "NVIDIA H200"


def test_a_device_mix_is_refused(tmp_path: Path, records: list[SessionRecord]) -> None:
    scored_session(
        tmp_path, MUON, [Step(1, timed(MUON, {W1: (1, 2)}, device_name="NVIDIA B200"))], model="model-c", created=when(9),
        session_id="c-b200",
    )  # fmt: skip
    mixed = [*records, *collect([tmp_path]).records]
    with pytest.raises(UsageError) as caught:
        build_results(mixed)
    message = caught.value.message
    assert "different device models" in message and "NVIDIA B200 (1 session(s): c-b200)" in message
    assert "NVIDIA H200 (6 session(s):" in message and "--device-model" in message
    assert build_results(mixed, device_model="B200").provenance.device_model == "NVIDIA B200"


def test_a_missing_task_counts_as_failed(tmp_path: Path, records: list[SessionRecord]) -> None:
    scored_session(tmp_path, MUON, [Step(1, timed(MUON, {W1: (1, 3)}))], model="model-d", created=when(9), session_id="d")
    results = build_results([*records, *collect([tmp_path]).records])
    d = results.group_scores("model-d", "none")
    assert d is not None and (d.passed, d.tasks) == (1, 2)
    assert d.sperf == pytest.approx((3.0 + 0.5) / 2)  # toy not run: the 0.5 penalty
    assert results.cell("model-d", "none", TOY).status == "not run"  # type: ignore[union-attr]


def test_the_latest_session_of_a_cell_counts(tmp_path: Path, records: list[SessionRecord]) -> None:
    scored_session(tmp_path, TOY, [Step(1, timed(TOY, {"v1": (1, 4)}))], model="model-b", created=when(30), session_id="b-toy-2")
    results = build_results([*records, *collect([tmp_path]).records])
    cell = results.cell("model-b", "none", TOY)
    assert cell is not None and cell.session == "b-toy-2" and cell.superseded == ["b-none-toy"] and cell.speedup == 4.0
    assert any("b-none-toy" in note for note in results.notes)


def test_baseline_sessions_first_correct_and_final(records: list[SessionRecord], baseline_root: Path) -> None:
    base = collect([baseline_root]).records
    # model-a's final muon: W1 2 ms, W2 1 ms. First correct baseline revision: W1 8, W2 4 -> 4x, 4x = 4.0
    first = build_results(records, baseline_records=base, pick="first-correct", tasks=[MUON])
    assert first.cell("model-a", "none", MUON).speedup == pytest.approx(4.0)  # type: ignore[union-attr]
    # the baseline's final revision: W1 4, W2 2 -> 2x, 2x = 2.0
    final = build_results(records, baseline_records=base, pick="final", tasks=[MUON])
    assert final.cell("model-a", "none", MUON).speedup == pytest.approx(2.0)  # type: ignore[union-attr]
    # model-b's muon (W1 4, W2 8) against the first correct: 8/4 = 2, 4/8 = 0.5 -> 1.0
    assert first.cell("model-b", "none", MUON).speedup == pytest.approx(1.0)  # type: ignore[union-attr]
    assert first.provenance.baseline_sessions == ["base-muon"]
    assert first.provenance.baseline == "the first-correct revision of base-model (1 baseline session(s))"
    # a task the baseline does not cover has no speedup (and no S_perf)
    both = build_results(records, baseline_records=base, tasks=[MUON, TOY])
    assert both.cell("model-b", "none", TOY).correct and both.cell("model-b", "none", TOY).speedup is None  # type: ignore[union-attr]
    assert both.group_scores("model-b", "none").sperf is None  # type: ignore[union-attr]
    assert "no baseline session for toy_task: no speedups there" in both.notes
    with pytest.raises(UsageError, match="unknown baseline pick"):
        build_results(records, baseline_records=base, pick="best")


def test_baseline_sessions_refusals(tmp_path: Path, records: list[SessionRecord], baseline_root: Path) -> None:
    base = collect([baseline_root]).records
    other = tmp_path / "b200"
    other.mkdir()
    scored_session(
        other, MUON, [Step(1, timed(MUON, {W1: (1, 2)}, device_name="NVIDIA B200"))], model="x", session_id="base-b200"
    )
    with pytest.raises(UsageError, match=r"NVIDIA B200 \(1 session\(s\): baseline base-b200\)"):
        build_results(records, baseline_records=collect([other]).records, tasks=[MUON])
    with pytest.raises(UsageError, match="several baseline sessions for task muon_orthogonalize: base-muon, base-b200"):
        build_results(records, baseline_records=[*base, *collect([other]).records])
    cpu = tmp_path / "cpu"
    cpu.mkdir()
    from workbench.scoring.testing import untimed

    scored_session(cpu, MUON, [Step(1, untimed(MUON, [W1]))], session_id="base-cpu")
    with pytest.raises(UsageError, match="has no latencies"):
        build_results(records, baseline_records=collect([cpu]).records)


# -- what counts as a result (issue 29) -------------------------------------------------------------
def _passed_then_broken(root: Path) -> None:
    scored_session(root, MUON, [Step(2, timed(MUON, {W1: (4, 4), W2: (2, 8)}))], model="m", created=when(1), session_id="good")
    scored_session(  # a later session of the same cell that never got a model answer
        root, MUON, [], model="m", created=when(5), session_id="broken", outcome="infrastructure",
        finish_reason="the model provider failed: connection refused",
    )  # fmt: skip


def test_a_session_broken_by_infrastructure_is_no_result_and_supersedes_nothing(tmp_path: Path) -> None:
    _passed_then_broken(tmp_path)
    results = build_results(collect([tmp_path]).records, catalog=CATALOG)
    cell = results.cell("m", "none", MUON)
    assert cell is not None and cell.session == "good" and cell.correct and not cell.superseded
    assert [(s.session, s.why) for s in results.set_aside] == [
        ("broken", "infrastructure: the model provider failed: connection refused")
    ]
    assert any(n.startswith("not counted: broken") for n in results.notes)
    assert results.provenance.sessions == ["good"] and "1 more not counted" in results.provenance.caption()


def test_an_excluded_session_is_not_counted_and_says_why(tmp_path: Path) -> None:
    from workbench.session.events import SessionExcluded, SessionIncluded
    from workbench.session.layout import SessionRef
    from workbench.session.testing import write_events

    _passed_then_broken(tmp_path)
    ref = SessionRef("good", tmp_path / "good")
    write_events(ref, [SessionExcluded(reason="ran on a throttled GPU")])
    with pytest.raises(UsageError, match=r"every session was set aside: .*throttled GPU"):
        build_results(collect([tmp_path]).records, catalog=CATALOG)
    write_events(ref, [SessionIncluded(reason="re-checked")])
    assert build_results(collect([tmp_path]).records, catalog=CATALOG).cell("m", "none", MUON) is not None


@pytest.mark.parametrize(
    ("reason", "exit_code", "expected"),
    [
        ("the agent cannot start: no API key", None, "infrastructure"),
        ("the model provider failed: HTTP 500", None, "infrastructure"),
        ("the command driver failed: the command's sandbox cannot start", None, "infrastructure"),
        ("the command exited with code 127", 127, "infrastructure"),
        ("the command exited with code 1", 1, "agent_failed"),
        ("stopped; the command was terminated (code -15)", -15, "completed"),
        ("the agent submitted revision 3", None, "completed"),
    ],
)
def test_logs_without_an_outcome_are_classified_as_drivers_decide_now(reason: str, exit_code: int | None, expected: str) -> None:
    from workbench.session.events import DriverFinished
    from workbench.session.state import outcome_of

    assert outcome_of(DriverFinished(driver="x", reason=reason, exit_code=exit_code)) == expected


def test_repetitions_are_averaged_with_their_spread_and_paired_against_unguided(tmp_path: Path) -> None:
    from workbench.scoring import build_tables

    speedups = {("none", 1): 2.0, ("none", 2): 4.0, ("L1", 1): 3.0, ("L1", 2): 3.0}
    for (config, rep), x in speedups.items():
        scored_session(
            tmp_path, MUON, [Step(1, timed(MUON, {W1: (1, x), W2: (1, x)}))], model="m", guidance=config,  # type: ignore[arg-type]
            session_id=f"camp--m--{MUON}--{config.lower()}--r{rep}", created=when(rep),
        )  # fmt: skip
    results = build_results(collect([tmp_path]).records, catalog=CATALOG)
    none, l1 = results.group_scores("m", "none"), results.group_scores("m", "L1")
    assert none is not None and l1 is not None
    assert none.repetitions == 2 and none.sperf_each == [pytest.approx(2.0), pytest.approx(4.0)]
    assert none.sperf == pytest.approx(3.0) and none.sperf_sd == pytest.approx(math.sqrt(2))
    assert l1.sperf == pytest.approx(3.0) and l1.sperf_sd == pytest.approx(0.0)
    assert none.passed == 2 and none.tasks == 2  # task runs over both repetitions
    assert not any(c.superseded for c in results.cells)  # r1 is a repetition, not an earlier attempt
    tables = {t.id: t for t in build_tables(results)}
    table1 = {row["model"]: row for row in tables["table1"].records()}
    assert table1["m"]["repetitions[none]"] == 2 and table1["m"]["sperf_sd[none]"] == pytest.approx(math.sqrt(2))
    (pair,) = tables["paired"].records()
    assert (pair["config"], pair["pairs"], pair["better"]) == ("L1", 2, "1/2")  # +1 in r1, -1 in r2
    assert pair["difference"] == pytest.approx(0.0) and pair["unguided"] == pytest.approx(3.0)


def test_per_task_tables_give_each_task_once_over_its_repetitions(tmp_path: Path) -> None:
    from workbench.scoring import build_tables
    from workbench.scoring.termcharts import task_bars

    runs = {1: timed(MUON, {W1: (1, 2), W2: (1, 2)}), 2: timed(MUON, {W1: (1, 8), W2: (1, 8)})}
    runs[3] = timed(MUON, {W1: (1, 1), W2: (1, 1)}, status="incorrect_numerical")
    for rep, report in runs.items():
        scored_session(
            tmp_path, MUON, [Step(1, report)], model="m", guidance="none",
            session_id=f"camp--m--{MUON}--none--r{rep}", created=when(rep),
        )  # fmt: skip
    results = build_results(collect([tmp_path]).records, catalog=CATALOG)
    assert results.repeated
    tables = {t.id: t for t in build_tables(results)}
    (row,) = tables["task_speedups"].records()
    assert row["m[none]"] == pytest.approx(4.0)  # the geometric mean of 2x and 8x; the failed run has no speedup
    assert row["sd m[none]"] == pytest.approx(math.sqrt(18)) and row["correct m[none]"] == "2/3"
    workloads = tables["workloads"].records()
    assert [w["workload"] for w in workloads] == [W1, W2]  # one row per workload, not one per repetition
    assert workloads[0]["speedup"] == pytest.approx(4.0) and workloads[0]["latency_ms"] == pytest.approx(1.0)
    assert workloads[0]["runs"] == 2
    assert [r["repetition"] for r in tables["sessions"].records()] == [1, 2, 3]
    bars = task_bars(results).plain
    assert bars.count("m none") == 1 and "4.00x (2/3 correct)" in bars


def test_a_repetition_without_latencies_leaves_the_means_unknown_not_the_failed_ones(tmp_path: Path) -> None:
    # on the CPU: r1 passes (no latency), r2 fails; the guided runs pass in both (no latency)
    from workbench.scoring import build_tables
    from workbench.scoring.testing import untimed

    runs = {("none", 1): "passed", ("none", 2): "runtime_error", ("L1", 1): "passed", ("L1", 2): "passed"}
    for minute, ((config, rep), status) in enumerate(runs.items()):
        scored_session(
            tmp_path, MUON, [Step(1, untimed(MUON, [W1, W2], status=status))], model="m", guidance=config,  # type: ignore[arg-type]
            session_id=f"camp--m--{MUON}--{config.lower()}--r{rep}", created=when(minute),
        )  # fmt: skip
    results = build_results(collect([tmp_path]).records, catalog=CATALOG)
    none = results.group_scores("m", "none")
    assert none is not None and none.sperf_each == [None, pytest.approx(0.5)]
    assert none.sperf is None and none.sperf_sd is None  # not 0.5: the mean of the failed repetition alone
    assert none.fast_p["1"] is None and none.correctness == pytest.approx(0.5)
    paired = next(t for t in build_tables(results) if t.id == "paired")
    assert paired.rows == [] and any("2 pair(s) left out" in note for note in paired.notes)


def test_a_repetition_is_read_from_session_toml_or_a_campaigns_session_name() -> None:
    from workbench.scoring.collect import _repetition_in_id

    assert _repetition_in_id("paper--gpt--muon_orthogonalize--l1-l2--r3") == 3
    assert _repetition_in_id("paper--gpt--muon_orthogonalize--none--r2--design") == 2
    assert _repetition_in_id("20261201-120000-muon_orthogonalize-ab12") == 1
