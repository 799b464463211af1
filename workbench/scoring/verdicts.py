"""The judge's scores as scoring uses them. The verdict and review shapes, and the effective score of a level
(the latest review, else the judge's valid score), are defined once, by the judge: `workbench.judge.verdict`
and `workbench.judge.scores` (docs/judge.md). Here: the levels, JS and the scores of a failed submission.
"""

from __future__ import annotations

from collections.abc import Mapping

from workbench.judge.verdict import LEVELS, Level, VerdictKind

__all__ = ["LEVELS", "Level", "LevelScores", "VerdictKind", "js", "zero_levels"]

LevelScores = dict[Level, float | None]


def js(levels: LevelScores | Mapping[str, float | None]) -> float | None:
    """JS_impl or JS_design: the equal-weight mean of L1, L2 and L3, or None unless all three are valid."""
    values = [dict(levels).get(level) for level in LEVELS]
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(LEVELS)


def zero_levels() -> LevelScores:
    """An incorrect submission's scores: 0 at every level (the paper's rule; the judge is not asked)."""
    zero: float | None = 0.0
    return dict.fromkeys(LEVELS, zero)
