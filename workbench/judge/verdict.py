"""The judge's data: what the model is asked to reply (`JudgeReply`), what a `judge_verdict` event keeps
(`VerdictRecord`) and what a `review` event keeps (`ReviewRecord`), as pydantic models.

The model's reply (validated again here whatever the provider's structured output promised):

    {"levels": {"L1": {"score": 62, "rationale": "...", "realized": ["L1.c.square_side"], "partial": [...],
                       "missing": [...], "citations": [{"file": "solution.py", "start_line": 40, "end_line": 52,
                                                        "quote": "...", "criterion": "L1.c.square_side"}]},
                "L2": {...}, "L3": {...}}}

A `judge_verdict` event's `verdict` is `VerdictRecord.model_dump(mode="json")`: per level the score (None when
the level is invalid, with `valid: false`, `invalid: true` and its `errors`), the rationale, the criteria
realised, partial and missing, the citations with their verification, then the judged revision, the model,
the provider, the prompt's hash, the temperature, every model call's usage and cost, and the re-asks.
This is the one definition of the shape: scoring reads verdicts and reviews through `workbench.judge.scores`.

A `review` event's `review` is `ReviewRecord.model_dump(mode="json")`: one level's new score, the judge's
score it confirms or changes (`original_score`), the action, the author, the reason and the time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.catalog.guidance import LEVELS, Level
from workbench.llm.usage import Usage

VerdictKind = Literal["impl", "design"]
KINDS: tuple[VerdictKind, ...] = ("impl", "design")
ReviewAction = Literal["confirm", "change"]
MAX_CITATIONS = 4

__all__ = [
    "KINDS",
    "LEVELS",
    "MAX_CITATIONS",
    "BadRecord",
    "Citation",
    "CitationCheck",
    "JudgeReply",
    "Level",
    "LevelReply",
    "LevelVerdict",
    "ModelCallRecord",
    "Reask",
    "ReviewAction",
    "ReviewRecord",
    "VerdictKind",
    "VerdictRecord",
    "parse_review",
    "parse_verdict",
]


# --- the model's reply ------------------------------------------------------------------------------------


class Citation(BaseModel):
    """One passage of the candidate: inclusive 1-based lines of `file` (workspace-relative), their exact text,
    and the rubric criterion (of the cited level) it supports or shows missing."""

    model_config = ConfigDict(extra="forbid")

    file: str
    start_line: int
    end_line: int
    quote: str
    criterion: str


class LevelReply(BaseModel):
    """The model's finding for one level, as it replied (not yet verified)."""

    model_config = ConfigDict(extra="forbid")

    score: float = Field(ge=0, le=100)
    rationale: str = Field(min_length=1)
    realized: list[str]
    partial: list[str]
    missing: list[str]
    citations: list[Citation] = Field(max_length=MAX_CITATIONS)


class JudgeReply(BaseModel):
    """The whole reply: one finding per level."""

    model_config = ConfigDict(extra="forbid")

    levels: dict[Level, LevelReply]


# --- the recorded verdict ---------------------------------------------------------------------------------


class CitationCheck(BaseModel):
    """The verification of one citation: `ok`, or the errors found (range, executable source, quote, criterion)."""

    citation: int  # 1-based, in the level's order
    ok: bool
    errors: list[str] = []


class LevelVerdict(BaseModel):
    """One level of a verdict. A valid level has a score; an invalid one (its reply still failing verification
    after the re-asks, or never received) has `score` None, `valid` False, `invalid` True and its `errors`; what
    the model last proposed for it is kept in `proposed_score`, `rationale` and `citations`."""

    model_config = ConfigDict(extra="forbid")

    score: float | None = Field(default=None, ge=0, le=100)
    valid: bool = True
    invalid: bool = False
    errors: list[str] = []
    proposed_score: float | None = None
    rationale: str = ""
    realized: list[str] = []
    partial: list[str] = []
    missing: list[str] = []
    citations: list[Citation] = []
    verification: list[CitationCheck] = []
    attempt: int | None = None  # the model call (1-based) whose reply gave this level; None: no call

    @property
    def usable_score(self) -> float | None:
        return self.score if self.valid else None


class ModelCallRecord(BaseModel):
    """One model call of a verdict (retries of a transient failure are inside it)."""

    attempt: int
    model: str
    usage: Usage
    cost_usd: float | None
    latency_s: float
    stop_reason: str = ""
    request_id: str | None = None
    retries: int = 0


class Reask(BaseModel):
    """A re-ask: the model was sent its errors and asked again."""

    attempt: int  # the call that answered the re-ask
    reason: Literal["malformed", "verification"]
    levels: list[Level]
    errors: list[str]


class VerdictRecord(BaseModel):
    """`JudgeVerdict.verdict`: one verdict on one revision (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid")

    kind: VerdictKind
    judge: str  # the model asked (as scoring reads it); "" when no model was asked
    provider: str  # openai, openai-responses, anthropic ("" when no model was asked)
    model: str = ""  # the model as the API reported it
    rev: int
    sha: str
    file: str  # the judged file, workspace-relative (solution.py, model_design.json)
    revision_status: str | None = None  # the harness's status of the revision (None for a design)
    model_called: bool = True  # False: the revision failed the harness, scored 0 without asking
    note: str = ""
    prompt_hash: str = ""  # sha256 of the system and user templates and the reply schema
    input_hash: str = ""  # sha256 of the filled system and user messages
    templates: list[str] = []  # the prompt files used, relative to workbench/judge/
    temperature: float | None = None  # None: the provider's default (not sent)
    max_reasks: int = 2
    levels: dict[Level, LevelVerdict]
    complete: bool  # every level valid
    js: float | None  # mean of the three levels, only when all three are valid
    usage: Usage = Usage()
    cost_usd: float | None = None  # None: no call, or a model missing from the price table
    calls: list[ModelCallRecord] = []
    reasks: list[Reask] = []
    time: datetime
    # several verdicts asked together (`judge run --samples N`, several `--model`s): their group's id, this
    # verdict's sample number (1-based, per model) and the group's size; the group's mean is the judge's score
    group: str = ""
    sample: int = 1
    group_size: int = 1

    def level(self, level: Level) -> LevelVerdict:
        return self.levels[level]


class ReviewRecord(BaseModel):
    """`Review.review`: a reviewer's decision on one level of a verdict."""

    model_config = ConfigDict(extra="forbid")

    level: Level
    score: float = Field(ge=0, le=100)  # the level's score from now on
    kind: VerdictKind
    action: ReviewAction  # confirm: the judge's score kept; change: a new score
    original_score: float | None  # the judge's score of the verdict reviewed (None: the level was invalid)
    previous_score: float | None = None  # the effective score before this review
    verdict_seq: int | None = None  # the judge_verdict event reviewed
    author: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    time: datetime


def _first_error(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return f"{where}: {first['msg']}"


class BadRecord(ValueError):
    """A verdict or review dict of an unexpected shape (the message names the field)."""


def parse_verdict(data: dict[str, Any]) -> VerdictRecord:
    try:
        return VerdictRecord.model_validate(data)
    except ValidationError as exc:
        raise BadRecord(f"judge verdict: {_first_error(exc)}") from None


def parse_review(data: dict[str, Any]) -> ReviewRecord:
    try:
        return ReviewRecord.model_validate(data)
    except ValidationError as exc:
        raise BadRecord(f"review: {_first_error(exc)}") from None
