"""The judge's verdicts and the reviewers' edits as scoring reads them: the one definition of the dict shapes
carried by the `judge_verdict` and `review` events, and the effective score of each level.

A `judge_verdict` event's `verdict` (extra keys are kept and ignored):

    {
      "kind": "impl",                  # "impl": code of a revision (JS_impl); "design": a design proposal (JS_design)
      "judge": "qwen3.8-max",          # optional: the judging model
      "levels": {                      # all three levels; a level the judge could not score is invalid
        "L1": {"score": 62.0, "valid": true, "rationale": "...", "realized": [...], "missing": [...],
               "citations": [{"start": 10, "end": 14, "text": "..."}]},
        "L2": {"score": 70.0, "valid": true, ...},
        "L3": {"score": null, "valid": false, "error": "citation 2 does not match lines 40-42"}
      }
    }

A `review` event's `review` (one level of the verdict on the same revision):

    {"level": "L3", "score": 80.0, "kind": "impl", "original_score": null,
     "author": "alice", "reason": "the pipelining is in lines 40-52", "time": "2026-12-01T10:00:00Z"}

Effective score of a level: the latest review of that level (log order), else the judge's score when valid,
else none. JS (JS_impl or JS_design) = the mean of the three effective level scores, only when all three exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Level = Literal["L1", "L2", "L3"]
LEVELS: tuple[Level, ...] = ("L1", "L2", "L3")
VerdictKind = Literal["impl", "design"]


class LevelVerdict(BaseModel):
    """The judge's finding for one level. `valid` is False when its citations failed verification (after the
    judge was asked again): the level then has no score."""

    model_config = ConfigDict(extra="allow", frozen=True)

    score: float | None = Field(default=None, ge=0, le=100)
    valid: bool = True
    rationale: str = ""
    realized: list[str] = []
    missing: list[str] = []
    citations: list[dict[str, Any]] = []

    @property
    def usable_score(self) -> float | None:
        return self.score if self.valid else None


class Verdict(BaseModel):
    """`JudgeVerdict.verdict`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: VerdictKind = "impl"
    judge: str = ""
    levels: dict[Level, LevelVerdict]


class ReviewEdit(BaseModel):
    """`Review.review`: a reviewer's score for one level, keeping what the judge had said, who and why."""

    model_config = ConfigDict(extra="allow", frozen=True)

    level: Level
    score: float = Field(ge=0, le=100)
    kind: VerdictKind | None = None  # None: the verdict's own kind (the session's one kind of verdict)
    original_score: float | None = None
    author: str
    reason: str
    time: datetime | str | None = None  # ISO 8601 when the reviewer's tool writes it


class BadVerdict(ValueError):
    """A verdict or review dict that does not have the shape above (the message says which field)."""


def _first_error(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return f"{where}: {first['msg']}"


def parse_verdict(data: Mapping[str, Any]) -> Verdict:
    """Validate a `judge_verdict` dict; BadVerdict says what is wrong."""
    try:
        return Verdict.model_validate(dict(data))
    except ValidationError as exc:
        raise BadVerdict(f"judge verdict: {_first_error(exc)}") from None


def parse_review(data: Mapping[str, Any]) -> ReviewEdit:
    """Validate a `review` dict; BadVerdict says what is wrong."""
    try:
        return ReviewEdit.model_validate(dict(data))
    except ValidationError as exc:
        raise BadVerdict(f"review: {_first_error(exc)}") from None


LevelScores = dict[Level, float | None]


def effective_levels(verdict: Verdict | None, reviews: Sequence[ReviewEdit]) -> LevelScores:
    """Per level: the latest review's score (reviews in log order), else the judge's valid score, else None.
    Reviews of another kind than the verdict's are ignored."""
    kind = verdict.kind if verdict is not None else None
    scores: LevelScores = {}
    for level in LEVELS:
        judged = verdict.levels.get(level) if verdict is not None else None
        scores[level] = judged.usable_score if judged is not None else None
        for review in reviews:
            if review.level == level and (review.kind is None or kind is None or review.kind == kind):
                scores[level] = review.score
    return scores


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
