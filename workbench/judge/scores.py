"""Scores from a session's log: the judge's verdicts with the reviews applied, and the agreement between the
judge and its reviewers.

    judgements(events)        {(kind, rev): Judgement}: the latest verdict of that kind on that revision and the
                              reviews of it, in log order
    effective_scores(events)  {rev: {"L1": score | None, ...}}: per level the latest review, else the judge's
                              score when the level is valid, else None
    agreement(sessions)       per level (and all levels): pairs (judge's score, reviewer's score), their mean
                              absolute difference and Spearman rank correlation

Anything holding the log's events is accepted: a list of events, a `SessionView` (its `.events`) or an
object with `judge_verdicts` and `reviews` lists. Verdict or review dicts of another shape are skipped and
counted in `Judgements.skipped`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from workbench.judge.verdict import (
    LEVELS,
    BadRecord,
    Level,
    ReviewRecord,
    VerdictKind,
    VerdictRecord,
    parse_review,
    parse_verdict,
)
from workbench.session.events import Event, JudgeVerdict, Review

LevelScores = dict[Level, float | None]


@dataclass
class Judgement:
    """The judging of one revision for one kind: the latest verdict and every review of it (log order)."""

    kind: VerdictKind
    rev: int
    verdict: VerdictRecord | None = None
    verdict_seq: int | None = None
    verdicts: int = 0  # how many verdicts of this kind the revision had (the latest, or its group, counts)
    reviews: list[tuple[int, ReviewRecord]] = field(default_factory=list)  # (seq, review)
    group: list[VerdictRecord] = field(default_factory=list)  # the latest verdict's sample group (itself alone if none)

    def latest_review(self, level: Level) -> ReviewRecord | None:
        found = [review for _, review in self.reviews if review.level == level]
        return found[-1] if found else None

    def sample_scores(self, level: Level) -> list[float]:
        """The valid scores of `level` over the latest group's verdicts (one verdict: its score)."""
        found = [v.levels[level].usable_score for v in self.group if level in v.levels]
        return [s for s in found if s is not None]

    def judge_score(self, level: Level) -> float | None:
        """The judge's score of `level`: the latest verdict's, or the mean of its sample group's valid scores."""
        scores = self.sample_scores(level)
        return sum(scores) / len(scores) if scores else None

    def spread(self, level: Level) -> tuple[float, float, float] | None:
        """(lowest, highest, standard deviation) of the group's valid scores of `level`; None under two."""
        scores = self.sample_scores(level)
        if len(scores) < 2:
            return None
        mean = sum(scores) / len(scores)
        return min(scores), max(scores), math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))

    def effective(self, level: Level) -> float | None:
        """The latest review's score, else the judge's valid score, else None."""
        review = self.latest_review(level)
        return review.score if review is not None else self.judge_score(level)

    def levels(self) -> LevelScores:
        return {level: self.effective(level) for level in LEVELS}

    @property
    def js(self) -> float | None:
        """The mean of the three effective scores, only when all three exist."""
        scores = [self.effective(level) for level in LEVELS]
        return None if any(s is None for s in scores) else sum(s for s in scores if s is not None) / len(LEVELS)


class Judgements(dict[tuple[VerdictKind, int], Judgement]):
    """{(kind, rev): Judgement}, plus what could not be read (`skipped`)."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: list[str] = []

    def latest(self, kind: VerdictKind | None = None) -> Judgement | None:
        """The judgement with the latest verdict (by log position) of `kind` (None: any)."""
        found = [j for j in self.values() if (kind is None or j.kind == kind) and j.verdict_seq is not None]
        return max(found, key=lambda j: j.verdict_seq or 0) if found else None


def events_of(source: object) -> list[Event]:
    """The events of a list of events, a SessionView (`.events`) or a state with `judge_verdicts` and `reviews`."""
    events = getattr(source, "events", None)
    if events is not None:
        return list(events)
    verdicts, reviews = getattr(source, "judge_verdicts", None), getattr(source, "reviews", None)
    if verdicts is not None and reviews is not None:
        return sorted([*verdicts, *reviews], key=lambda e: e.seq)
    if isinstance(source, Iterable):
        return list(source)
    raise TypeError(f"cannot read judge events from {type(source).__name__}")


def judgements(source: object) -> Judgements:
    """Every (kind, revision) judged or reviewed, in the log's order (see the module's docstring)."""
    found = Judgements()
    for event in events_of(source):
        if isinstance(event, JudgeVerdict):
            try:
                verdict = parse_verdict(event.verdict)
            except BadRecord as exc:
                found.skipped.append(f"event {event.seq}: {exc}")
                continue
            judgement = found.setdefault((verdict.kind, event.rev), Judgement(verdict.kind, event.rev))
            same_group = bool(verdict.group) and judgement.verdict is not None and judgement.verdict.group == verdict.group
            judgement.group = [*judgement.group, verdict] if same_group else [verdict]
            judgement.verdict, judgement.verdict_seq = verdict, event.seq
            judgement.verdicts += 1
        elif isinstance(event, Review):
            try:
                review = parse_review(event.review)
            except BadRecord as exc:
                found.skipped.append(f"event {event.seq}: {exc}")
                continue
            found.setdefault((review.kind, event.rev), Judgement(review.kind, event.rev)).reviews.append((event.seq, review))
    return found


def effective_scores(source: object, kind: VerdictKind | None = None) -> dict[int, LevelScores]:
    """Per judged (or reviewed) revision, per level: the latest review, else the judge's valid score, else None.
    `kind`: only verdicts of that kind (None: both; a revision judged both ways then shows its code's)."""
    scores: dict[int, LevelScores] = {}
    for (judged_kind, rev), judgement in sorted(judgements(source).items(), key=lambda item: (item[0][1], item[0][0] != "impl")):
        if (kind is None or judged_kind == kind) and rev not in scores:
            scores[rev] = judgement.levels()
    return scores


# --- the review queue -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pending:
    """One level of a judge's verdict that no reviewer has looked at since the verdict was given."""

    session: str
    kind: VerdictKind
    rev: int
    level: Level
    judge: float | None  # the judge's score (None: its answer for the level was invalid)


def review_queue(session: str, source: object) -> list[Pending]:
    """The levels of the session's latest verdicts (per kind and revision) with no review given after that
    verdict: a review of an earlier verdict does not cover a newer one."""
    pending: list[Pending] = []
    for (kind, rev), judgement in sorted(judgements(source).items(), key=lambda item: (item[0][1], item[0][0])):
        if judgement.verdict is None or judgement.verdict_seq is None:
            continue
        for level in LEVELS:
            covered = any(review.level == level and seq > judgement.verdict_seq for seq, review in judgement.reviews)
            if not covered:
                pending.append(Pending(session, kind, rev, level, judgement.judge_score(level)))
    return pending


# --- agreement between the judge and the reviewers -------------------------------------------------------


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties getting the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson's on the ranks, ties averaged); None with fewer than two pairs
    or when either side has no spread."""
    if len(xs) != len(ys) or len(xs) < 2:
        return None
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    return cov / math.sqrt(vx * vy)


@dataclass(frozen=True)
class Pair:
    """One reviewed level: the judge's score the review was about and the reviewer's latest score."""

    session: str
    kind: VerdictKind
    rev: int
    level: Level
    judge: float
    reviewer: float


@dataclass(frozen=True)
class Agreement:
    """Agreement over the pairs of one level (or all levels)."""

    level: Level | Literal["all"]
    count: int
    mean_abs_diff: float | None
    spearman: float | None


def review_pairs(session: str, source: object) -> list[Pair]:
    """The session's (judge, reviewer) pairs: per (kind, revision, level) its latest review, against the judge's
    score it reviewed (`original_score`); a review of an invalid level (no judge score) makes no pair."""
    pairs: list[Pair] = []
    for (kind, rev), judgement in sorted(judgements(source).items(), key=lambda item: (item[0][1], item[0][0])):
        for level in LEVELS:
            review = judgement.latest_review(level)
            if review is not None and review.original_score is not None:
                pairs.append(Pair(session, kind, rev, level, review.original_score, review.score))
    return pairs


MIN_CORRELATION_PAIRS = 5  # fewer pairs: no rank correlation is shown (2 pairs always give +-1)


@dataclass(frozen=True)
class JudgePair:
    """One level of one judged revision scored by two judge models in one sample group (each its samples' mean)."""

    session: str
    kind: VerdictKind
    rev: int
    level: Level
    first: str  # the model, alphabetically first
    second: str
    first_score: float
    second_score: float


@dataclass(frozen=True)
class SampleSpread:
    """One level of one judged revision, sampled several times by one model: its scores' spread."""

    session: str
    kind: VerdictKind
    rev: int
    level: Level
    model: str
    scores: tuple[float, ...]

    @property
    def stdev(self) -> float:
        mean = sum(self.scores) / len(self.scores)
        return math.sqrt(sum((s - mean) ** 2 for s in self.scores) / (len(self.scores) - 1))


def _by_model(judgement: Judgement, level: Level) -> dict[str, list[float]]:
    scores: dict[str, list[float]] = {}
    for verdict in judgement.group:
        value = verdict.levels[level].usable_score if level in verdict.levels else None
        if value is not None and verdict.model_called:
            scores.setdefault(verdict.judge, []).append(value)
    return scores


def judge_pairs(session: str, source: object) -> list[JudgePair]:
    """Every pair of judge models that scored a level of a revision in one sample group (latest groups only)."""
    pairs: list[JudgePair] = []
    for (kind, rev), judgement in sorted(judgements(source).items(), key=lambda item: (item[0][1], item[0][0])):
        for level in LEVELS:
            scores = _by_model(judgement, level)
            models = sorted(scores)
            for i, first in enumerate(models):
                for second in models[i + 1 :]:
                    a, b = scores[first], scores[second]
                    pairs.append(JudgePair(session, kind, rev, level, first, second, sum(a) / len(a), sum(b) / len(b)))
    return pairs


def sample_spreads(session: str, source: object) -> list[SampleSpread]:
    """Every level a model scored at least twice in one sample group (latest groups only)."""
    found: list[SampleSpread] = []
    for (kind, rev), judgement in sorted(judgements(source).items(), key=lambda item: (item[0][1], item[0][0])):
        for level in LEVELS:
            for model, scores in sorted(_by_model(judgement, level).items()):
                if len(scores) >= 2:
                    found.append(SampleSpread(session, kind, rev, level, model, tuple(scores)))
    return found


@dataclass(frozen=True)
class JudgeAgreement:
    """Agreement between two judge models over one level (or all levels)."""

    first: str
    second: str
    level: Level | Literal["all"]
    count: int
    mean_abs_diff: float
    spearman: float | None


def judge_agreement(pairs: Sequence[JudgePair]) -> list[JudgeAgreement]:
    """Per pair of models, per level L1, L2, L3 and all levels: count, mean |first - second|, Spearman (None
    under MIN_CORRELATION_PAIRS pairs)."""
    rows: list[JudgeAgreement] = []
    for first, second in sorted({(p.first, p.second) for p in pairs}):
        for level in (*LEVELS, "all"):
            mine = [p for p in pairs if (p.first, p.second) == (first, second) and level in ("all", p.level)]
            if not mine:
                continue
            xs, ys = [p.first_score for p in mine], [p.second_score for p in mine]
            mad = sum(abs(x - y) for x, y in zip(xs, ys, strict=True)) / len(mine)
            rho = spearman(xs, ys) if len(mine) >= MIN_CORRELATION_PAIRS else None
            rows.append(JudgeAgreement(first, second, level, len(mine), mad, rho))  # type: ignore[arg-type]
    return rows


def agreement(pairs: Sequence[Pair]) -> list[Agreement]:
    """Per level L1, L2, L3, then all levels together: count, mean |judge - reviewer|, Spearman (None under
    MIN_CORRELATION_PAIRS pairs)."""
    rows: list[Agreement] = []
    for level in (*LEVELS, "all"):
        mine = [p for p in pairs if level in ("all", p.level)]
        judge, reviewer = [p.judge for p in mine], [p.reviewer for p in mine]
        mad = sum(abs(a - b) for a, b in zip(judge, reviewer, strict=True)) / len(mine) if mine else None
        rho = spearman(judge, reviewer) if len(mine) >= MIN_CORRELATION_PAIRS else None
        rows.append(Agreement(level, len(mine), mad, rho))  # type: ignore[arg-type]
    return rows
