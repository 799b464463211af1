"""The paper's metrics as pure functions over numbers: no sessions, files or devices here.

workload speedup  = baseline latency / candidate latency (same device model)
task speedup      = geometric mean of its workload speedups
task score        = the task speedup of a correct submission, PENALTY (0.5) for a failed task
S_perf (a model)  = arithmetic mean of the task scores over all tasks (the baseline scores 1.0)
S_perf (overall)  = geometric mean of the models' S_perf
correctness       = correct model-task pairs / all pairs
fast_p            = tasks correct with task speedup > p, over all tasks (p = 1, 1.5, 2)
S'perf over turns = per task the best eligible task speedup so far, FALLBACK (0.1) before the first
                    eligible submission; averaged over tasks like S_perf
roofline fraction = max(FLOPs / peak FLOP rate, bytes / peak bandwidth) / measured latency
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PENALTY = 0.5  # the task score of a failed task (S_perf)
FALLBACK = 0.1  # S'perf of a task before its first eligible submission
FAST_P: tuple[float, ...] = (1.0, 1.5, 2.0)


@dataclass(frozen=True)
class TaskOutcome:
    """One model-task pair: whether its final submission is correct and, when timed, its task speedup."""

    correct: bool
    speedup: float | None = None  # None: failed, or correct but not timed


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive numbers (ValueError for none or a non-positive one)."""
    if not values:
        raise ValueError("the geometric mean of nothing is undefined")
    if any(v <= 0 or math.isnan(v) for v in values):
        raise ValueError(f"the geometric mean needs positive numbers, got {list(values)}")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("the mean of nothing is undefined")
    return math.fsum(values) / len(values)


def workload_speedup(baseline_ms: float | None, candidate_ms: float | None) -> float | None:
    """baseline / candidate, or None when either is missing or not positive."""
    if baseline_ms is None or candidate_ms is None or baseline_ms <= 0 or candidate_ms <= 0:
        return None
    return baseline_ms / candidate_ms


def task_speedup(workload_speedups: Sequence[float | None]) -> float | None:
    """The geometric mean over the task's workloads, or None when any workload has no speedup."""
    if not workload_speedups or any(s is None for s in workload_speedups):
        return None
    return geomean([s for s in workload_speedups if s is not None])


def task_score(outcome: TaskOutcome) -> float | None:
    """The task's term in S_perf: its speedup when correct, PENALTY when failed, None when correct but untimed."""
    if not outcome.correct:
        return PENALTY
    return outcome.speedup


def performance_score(outcomes: Sequence[TaskOutcome]) -> float | None:
    """S_perf of one model over all tasks: the mean task score (PENALTY for a failed task). None when there
    are no tasks or a correct task has no speedup (untimed)."""
    scores = [task_score(o) for o in outcomes]
    if not scores or any(s is None for s in scores):
        return None
    return mean([s for s in scores if s is not None])


def overall_performance_score(model_scores: Sequence[float | None]) -> float | None:
    """S_perf over models: the geometric mean of the models' scores (None when any is None, or none)."""
    if not model_scores or any(s is None for s in model_scores):
        return None
    return geomean([s for s in model_scores if s is not None])


def correctness(outcomes: Sequence[TaskOutcome]) -> float | None:
    """Correct pairs over all pairs (None for no pairs)."""
    if not outcomes:
        return None
    return sum(1 for o in outcomes if o.correct) / len(outcomes)


def fast_p(outcomes: Sequence[TaskOutcome], p: float) -> float | None:
    """Pairs correct with a task speedup above p, over all pairs (failed ones included). None when there are
    none, or when a correct pair is untimed (whether it is fast is not known, as for S_perf)."""
    if not outcomes or any(o.correct and o.speedup is None for o in outcomes):
        return None
    return sum(1 for o in outcomes if o.correct and o.speedup is not None and o.speedup > p) / len(outcomes)


def all_correct_speedup(outcomes: Sequence[TaskOutcome]) -> float | None:
    """The geometric mean of the task speedups, only when every task is correct and timed (else None)."""
    if not outcomes or any(not o.correct or o.speedup is None for o in outcomes):
        return None
    return geomean([o.speedup for o in outcomes if o.speedup is not None])


def best_so_far(eligible: Sequence[tuple[int, float]], step: int) -> float:
    """One task's S'perf at `step`: the best score of its eligible submissions at or before `step`, FALLBACK
    before the first one (after it, even a score below FALLBACK is used as measured)."""
    seen = [score for at, score in eligible if at <= step]
    return max(seen) if seen else FALLBACK


def sperf_curve(tasks: Sequence[Sequence[tuple[int, float]]], horizon: int) -> list[tuple[int, float]]:
    """S'perf over steps 0..horizon for a model: per task `best_so_far`, averaged over the tasks (a task with
    no eligible submission stays at FALLBACK). Returns the points where the value changes (step 0 and the
    horizon always included)."""
    if not tasks:
        return []
    horizon = max(horizon, 0)
    steps = sorted({0, horizon, *(at for task in tasks for at, _ in task if 0 <= at <= horizon)})
    points: list[tuple[int, float]] = []
    for step in steps:
        value = mean([best_so_far(task, step) for task in tasks])
        if not points or value != points[-1][1] or step == horizon:
            points.append((step, value))
    return points


def value_at(points: Sequence[tuple[int, float]], step: int) -> float | None:
    """A step curve's value at `step` (the last point at or before it); None before the first point."""
    value = None
    for at, v in points:
        if at > step:
            break
        value = v
    return value


def roofline_ms(flops: float, nbytes: float, peak_tflops: float, bandwidth_tbs: float) -> float:
    """The least time the work can take: max(FLOPs / peak FLOP rate, bytes / peak bandwidth), in ms."""
    return max(flops / (peak_tflops * 1e12), nbytes / (bandwidth_tbs * 1e12)) * 1e3


def roofline_fraction(floor_ms: float, latency_ms: float) -> float | None:
    """The roofline time over the measured latency (1.0: at the roofline)."""
    if latency_ms <= 0:
        return None
    return floor_ms / latency_ms
