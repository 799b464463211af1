"""The pure metric functions on small examples computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import pytest

from workbench.scoring import metrics
from workbench.scoring.metrics import TaskOutcome

OK = TaskOutcome


def test_geomean_and_mean() -> None:
    assert metrics.geomean([2.0, 8.0]) == pytest.approx(4.0)  # sqrt(16)
    assert metrics.geomean([1.0, 1.5]) == pytest.approx(math.sqrt(1.5))
    assert metrics.geomean([3.0]) == pytest.approx(3.0)
    assert metrics.mean([4.0, 0.5]) == pytest.approx(2.25)
    for bad in ([], [1.0, 0.0], [2.0, -1.0]):
        with pytest.raises(ValueError):
            metrics.geomean(bad)
    with pytest.raises(ValueError):
        metrics.mean([])


def test_workload_and_task_speedup() -> None:
    assert metrics.workload_speedup(4.0, 2.0) == 2.0  # baseline 4 ms, candidate 2 ms
    assert metrics.workload_speedup(None, 2.0) is None
    assert metrics.workload_speedup(4.0, None) is None
    assert metrics.workload_speedup(4.0, 0.0) is None
    assert metrics.task_speedup([2.0, 8.0]) == pytest.approx(4.0)
    assert metrics.task_speedup([2.0, None]) is None  # one untimed workload: no task speedup
    assert metrics.task_speedup([]) is None


def test_performance_score_with_the_half_penalty() -> None:
    # two tasks: a correct one at 4.0x and a failed one (0.5): (4.0 + 0.5) / 2 = 2.25
    assert metrics.performance_score([OK(True, 4.0), OK(False)]) == pytest.approx(2.25)
    # a failed task scores 0.5 even when its (incorrect) code was fast
    assert metrics.task_score(OK(False, 9.0)) == metrics.PENALTY == 0.5
    # everything failed: 0.5
    assert metrics.performance_score([OK(False), OK(False)]) == pytest.approx(0.5)
    # a correct task without timing cannot be scored
    assert metrics.performance_score([OK(True, None), OK(True, 2.0)]) is None
    assert metrics.performance_score([]) is None


def test_overall_score_is_the_geometric_mean_over_models() -> None:
    # models at 2.25 and 1.25: sqrt(2.8125) = 1.677051
    assert metrics.overall_performance_score([2.25, 1.25]) == pytest.approx(math.sqrt(2.8125))
    assert metrics.overall_performance_score([1.0, 4.0]) == pytest.approx(2.0)
    assert metrics.overall_performance_score([2.0, None]) is None
    assert metrics.overall_performance_score([]) is None


def test_correctness_over_pairs() -> None:
    assert metrics.correctness([OK(True, 1.0), OK(False), OK(True, None), OK(False)]) == 0.5
    assert metrics.correctness([]) is None


def test_fast_p_counts_every_task_in_the_denominator() -> None:
    outcomes = [OK(True, 4.0), OK(True, 1.5), OK(True, 1.0), OK(False, 3.0), OK(False)]
    # above 1: 4.0 and 1.5 (1.0 is not above 1; the failed ones do not count) -> 2/5
    assert metrics.fast_p(outcomes, 1.0) == pytest.approx(2 / 5)
    # above 1.5: only 4.0 (strictly above) -> 1/5
    assert metrics.fast_p(outcomes, 1.5) == pytest.approx(1 / 5)
    assert metrics.fast_p(outcomes, 2.0) == pytest.approx(1 / 5)
    assert metrics.fast_p([], 1.0) is None
    # a correct task without a latency (the CPU): whether it is fast is not known, so neither is fast_p
    assert metrics.fast_p([*outcomes, OK(True, None)], 1.0) is None


def test_speedup_of_models_correct_everywhere() -> None:
    assert metrics.all_correct_speedup([OK(True, 1.0), OK(True, 1.5)]) == pytest.approx(math.sqrt(1.5))
    assert metrics.all_correct_speedup([OK(True, 2.0), OK(False)]) is None
    assert metrics.all_correct_speedup([OK(True, 2.0), OK(True, None)]) is None


def test_sperf_fallback_until_the_first_eligible_submission() -> None:
    eligible = [(3, 2.0), (7, 4.0)]
    assert metrics.best_so_far(eligible, 0) == metrics.FALLBACK == 0.1
    assert metrics.best_so_far(eligible, 2) == 0.1
    assert metrics.best_so_far(eligible, 3) == 2.0  # the fallback ends at the first eligible submission
    assert metrics.best_so_far(eligible, 6) == 2.0
    assert metrics.best_so_far(eligible, 9) == 4.0
    # best so far, not latest: a slower later submission does not lower it
    assert metrics.best_so_far([(1, 3.0), (2, 1.0)], 2) == 3.0
    # after the first eligible submission a score below the fallback is used as measured
    assert metrics.best_so_far([(2, 0.05)], 1) == 0.1
    assert metrics.best_so_far([(2, 0.05)], 2) == 0.05


def test_sperf_curve_over_tasks() -> None:
    # task A: 2.0 at turn 3, 4.0 at turn 7; task B never eligible (0.1 throughout)
    # turn 0: (0.1 + 0.1) / 2 = 0.1; turn 3: (2.0 + 0.1) / 2 = 1.05; turn 7: (4.0 + 0.1) / 2 = 2.05
    curve = metrics.sperf_curve([[(3, 2.0), (7, 4.0)], []], horizon=10)
    assert curve == [(0, pytest.approx(0.1)), (3, pytest.approx(1.05)), (7, pytest.approx(2.05)), (10, pytest.approx(2.05))]
    assert metrics.value_at(curve, 5) == pytest.approx(1.05)
    assert metrics.value_at(curve, 100) == pytest.approx(2.05)
    assert metrics.sperf_curve([], 5) == []


def test_roofline() -> None:
    # 2e12 FLOP at 1000 TFLOP/s = 2 ms; 1e12 bytes at 2 TB/s = 500 ms: memory bound, 500 ms
    assert metrics.roofline_ms(2e12, 1e12, 1000.0, 2.0) == pytest.approx(500.0)
    # 4e15 FLOP at 1000 TFLOP/s = 4000 ms > 500 ms: compute bound
    assert metrics.roofline_ms(4e15, 1e12, 1000.0, 2.0) == pytest.approx(4000.0)
    assert metrics.roofline_fraction(500.0, 1000.0) == pytest.approx(0.5)
    assert metrics.roofline_fraction(500.0, 0.0) is None
