"""The judge on sessions: which revision is judged, what it is judged with, and the events that record it.

    outcome = judge_session(store, ref, catalog, provider)          # the submission (or --revision), recorded
    review = record_review(store, ref, "L3", reason="...", score=80)  # a reviewer's decision, recorded
    material = load_material(store, ref, catalog, rev)                # what the review screen shows

What is judged:
- A code session (`agent_mode` code, or any non-agent session): by default its submission. A revision that
  passed the harness is judged by the model; one whose evaluation finished without passing scores 0 at every
  level with no model call. A session that ended with no passing revision (its submission is "none") is a
  failed attempt, a result and not a fault: it scores 0 at every level with no model call, recorded on its
  latest evaluated revision (else its latest revision). A revision never evaluated (pending, skipped) asked
  for by number, or a session not ended yet, is "nothing to judge" (`NothingToJudge`, the CLI's exit 1).
- A design session (`agent_mode = "design"`): by default the latest revision that wrote `model_design.json`;
  the judge reads the canonical text of that file. A design session that ended without writing one is a
  failed attempt: 0 at every level, no model call, recorded on its latest revision.

Writing: the verdict and the reviews are appended by this short-lived process through the session's own
`EventWriter`, which takes the runner lock (`.runner.lock`), so a runner and a judge never write the log at
once and every line is sealed like the runner's. A session being run is refused before any model is asked
(judge it when the run has ended); the lock is then taken only for the append, waiting up to `lock_wait_s`
(default 10 s) for another judge or review process that holds it for milliseconds. Shipped examples are
read-only: copy the folder into the sessions root to judge or review it there.
"""

from __future__ import annotations

import getpass
import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from pydantic import ValidationError

from workbench.catalog import Catalog
from workbench.catalog.guidance import Guidance, Rubric
from workbench.catalog.task import Task
from workbench.errors import SessionError, UsageError, WorkbenchError
from workbench.judge.evidence import EvidenceSpan, criterion_evidence
from workbench.judge.judge import MAX_REASKS, Progress, run_judge, zero_verdict
from workbench.judge.prompt import DESIGN_FILE, EXPERT_FILE, JudgeInput, build_input, canonical_design
from workbench.judge.scores import Judgement, judgements
from workbench.judge.verdict import Level, ReviewRecord, VerdictKind, VerdictRecord
from workbench.llm import Provider, RetryPolicy
from workbench.session.eventlog import LOCK_NAME, SessionLocked, append_events, lock_pid
from workbench.session.events import JudgeVerdict, Review
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore, SessionView

LOCK_WAIT_S = 10.0  # how long to wait for a runner's lock before saying the session is busy


class NothingToJudge(SessionError):
    """The session (or the revision asked for) has nothing the judge can score (the CLI exits 1)."""


def session_kind(view: SessionView) -> VerdictKind:
    """design for a design session (the agent's `agent_mode = "design"`), else impl."""
    return "design" if view.config.design_mode else "impl"


def default_author() -> str:
    """The OS user, as the author of a review when none is given."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return os.environ.get("USER") or "unknown"


def check_writable(store: SessionStore, ref: SessionRef) -> None:
    """SessionError for a shipped example (read-only) or a session being run now."""
    if ref.read_only:
        raise SessionError(
            f"session {ref.id} is a shipped example (read-only): copy its folder into the sessions root "
            f"(cp -r {ref.dir} {store.root}/) to judge or review it there"
        )
    if store.is_running(ref):
        pid = lock_pid(ref.dir / LOCK_NAME)
        holder = f"pid {pid}" if pid is not None else "another process"
        raise SessionLocked(
            f"session {ref.id} is being run by {holder}: judge or review it when the run has ended "
            f"(`d2k-workbench session stop {ref.id}` ends it)"
        )


# --- what is judged ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The revision to judge and how: `status` is the harness's status (None for a design), `text` the file's
    text (None when it is not needed: a failed revision scores 0 unread)."""

    kind: VerdictKind
    rev: int
    sha: str
    file: str
    status: str | None
    text: str | None
    launched: dict[str, dict[str, int]] | None = None  # the evaluation's launch record (None: none stored)
    no_result: str = ""  # a session that ended with nothing to judge (a failed attempt): why it scores 0

    @property
    def failed(self) -> bool:
        """Scored 0 at every level without asking a model."""
        return bool(self.no_result) or (self.kind == "impl" and self.status != "passed")


def _revision(view: SessionView, rev: int) -> None:
    if rev not in view.state.revisions:
        known = sorted(view.state.revisions)
        where = f"revisions {known[0]}-{known[-1]}" if known else "no revisions yet"
        raise UsageError(f"session {view.ref.id} has no revision {rev} ({where})")


def resolve_target(store: SessionStore, view: SessionView, rev: int | None = None) -> Target:
    """The revision `rev` (None: the session's default, see the module's docstring) and what it is judged on.
    NothingToJudge or UsageError when there is none."""
    ref, state = view.ref, view.state
    kind = session_kind(view)
    if kind == "design":
        if rev is None:
            written = [r.rev for r in state.ordered() if DESIGN_FILE in r.files]
            if not written:
                if state.finished is not None and state.revisions:
                    return failed_attempt(view, "design", f"the session ended without a design ({DESIGN_FILE})")
                raise NothingToJudge(f"session {ref.id} has no design ({DESIGN_FILE}) to judge")
            rev = written[-1]
        _revision(view, rev)
        revision = state.revisions[rev]
        raw = store.workspace(ref).read_bytes(revision.sha, DESIGN_FILE)
        if raw is None:
            raise NothingToJudge(f"revision {rev} of session {ref.id} has no {DESIGN_FILE}")
        return Target("design", rev, revision.sha, DESIGN_FILE, None, canonical_design(raw))
    if rev is None:
        submission = state.submission
        if submission is None:
            raise NothingToJudge(f"session {ref.id} has no submission yet: pass --revision to judge one of its revisions")
        if submission.rev is None:
            if not state.revisions:
                raise NothingToJudge(f"session {ref.id} has no revision: nothing to judge")
            return failed_attempt(view, "impl", f"no revision passed ({submission.reason})")
        rev = submission.rev
    _revision(view, rev)
    revision = state.revisions[rev]
    file = view.config.solution
    if revision.eval_state != "finished" or revision.report is None:
        what = {"skipped": "was skipped (a newer revision replaced it)", "running": "is being evaluated"}.get(
            revision.eval_state, "has not been evaluated yet"
        )
        raise NothingToJudge(f"revision {rev} of session {ref.id} {what}: nothing to judge")
    status = revision.report.status
    if status != "passed":
        return Target("impl", rev, revision.sha, file, status, None)
    text = store.workspace(ref).read_text(revision.sha, file)
    if text is None:
        raise NothingToJudge(f"revision {rev} of session {ref.id} has no {file}")
    launched = {w.name: dict(w.kernels) for w in revision.report.workloads}
    recorded = any(launched.values())  # a passing call always launches: none at all is a report from before the record
    return Target("impl", rev, revision.sha, file, status, text, launched if recorded else None)


def failed_attempt(view: SessionView, kind: VerdictKind, why: str) -> Target:
    """A session that ended with nothing to judge (no passing revision, no design): a failed attempt, scored 0
    with no model call on its latest evaluated revision, else its latest revision."""
    ordered = view.state.ordered()
    evaluated = [r for r in ordered if r.eval_state == "finished"]
    anchor = evaluated[-1] if evaluated else ordered[-1]
    status = anchor.status or ("template (not evaluated)" if anchor.skip_reason == "template" else anchor.eval_state)
    file = DESIGN_FILE if kind == "design" else view.config.solution
    note = f"a failed attempt: {why}; 0 at every level, no model was asked"
    return Target(kind, anchor.rev, anchor.sha, file, status if kind == "impl" else None, None, no_result=note)


@dataclass(frozen=True)
class TaskMaterial:
    """The task's side of a judgement: the task, its guidance and rubric, the expert's source (None when the
    task ships none) and, per criterion, the expert's definitions its evidence names."""

    task: Task
    guidance: Guidance
    rubric: Rubric
    expert_source: str | None
    evidence: dict[str, list[EvidenceSpan]]


def task_material(catalog: Catalog, task_id: str) -> TaskMaterial:
    task = catalog.task(task_id)
    guidance = catalog.guidance(task_id)
    rubric = catalog.rubric(task_id)
    if guidance is None or rubric is None:
        raise UsageError(
            f"task {task_id} has no rubric: the judge needs {catalog.guidance_dir / task_id}/guidance.toml and rubric.toml"
        )
    expert = task.dir / EXPERT_FILE
    source = expert.read_text(encoding="utf-8") if expert.is_file() else None
    return TaskMaterial(task, guidance, rubric, source, criterion_evidence(rubric, source or ""))


def judge_input(target: Target, material: TaskMaterial) -> JudgeInput:
    assert target.text is not None
    return build_input(
        target.kind,
        material.task,
        material.guidance,
        material.rubric,
        rev=target.rev,
        sha=target.sha,
        file=target.file,
        text=target.text,
        expert_source=material.expert_source,
        launched=target.launched,
    )


# --- judging and reviewing --------------------------------------------------------------------------------


def _resolve(provider: Provider | Callable[[], Provider]) -> Provider:
    """The provider, or the one a factory makes."""
    if callable(provider) and not hasattr(provider, "complete"):
        return provider()
    return cast("Provider", provider)


@dataclass(frozen=True)
class JudgeOutcome:
    verdict: VerdictRecord
    event: JudgeVerdict  # as written (seq, ts set)
    group: tuple[tuple[VerdictRecord, JudgeVerdict], ...] = ()  # every verdict of a sampled judgement, in order


def judge_samples(
    store: SessionStore,
    ref: SessionRef,
    catalog: Catalog,
    providers: Sequence[Provider | Callable[[], Provider]],
    *,
    samples: int = 1,
    progress: Progress | None = None,
    **options: Any,
) -> JudgeOutcome:
    """Judge one revision `samples` times with each provider (one model each), recording every verdict with
    the group's id, its sample number and the group's size: the judgement's score is then the group's mean
    (`scores.Judgement`), its spread and the agreement between the models are in `judge agreement`. `options`
    are judge_session's. The outcome's `verdict` is the last one; `group` holds them all."""
    if samples < 1:
        raise UsageError(f"--samples must be at least 1 (got {samples})")
    if not providers:
        raise UsageError("give at least one model to judge with")
    say = progress or (lambda _: None)
    group = secrets.token_hex(6) if samples * len(providers) > 1 else ""
    size = samples * len(providers)
    done: list[tuple[VerdictRecord, JudgeVerdict]] = []
    for provider in providers:
        for sample in range(1, samples + 1):
            if size > 1:
                say(f"sample {len(done) + 1} of {size}")
            outcome = judge_session(
                store, ref, catalog, provider, progress=say, sample=(group, sample, size) if size > 1 else None, **options
            )
            done.append((outcome.verdict, outcome.event))
            if not outcome.verdict.model_called:
                return JudgeOutcome(outcome.verdict, outcome.event, tuple(done))  # a failed revision: 0, asked once
    last, event = done[-1]
    return JudgeOutcome(last, event, tuple(done))


def judge_session(
    store: SessionStore,
    ref: SessionRef,
    catalog: Catalog,
    provider: Provider | Callable[[], Provider],
    *,
    rev: int | None = None,
    temperature: float | None = None,
    max_reasks: int = MAX_REASKS,
    policy: RetryPolicy | None = None,
    progress: Progress | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
    sample: tuple[str, int, int] | None = None,
) -> JudgeOutcome:
    """Judge one revision of a session and append the verdict to its log. `provider` may be a factory, called
    only when a model is needed (a failed revision asks none). Raises NothingToJudge, UsageError,
    SessionError (read-only, being run) or ProviderError (nothing is then recorded)."""
    say = progress or (lambda _: None)
    check_writable(store, ref)
    view = store.load(ref)
    target = resolve_target(store, view, rev)
    material = task_material(catalog, view.config.task)
    if target.failed:
        default = f"revision {target.rev} did not pass the harness ({target.status}): 0 at every level, no model asked"
        say(target.no_result or default)
        status = (target.status or "unknown") if target.kind == "impl" else None  # a design has no harness status
        verdict = zero_verdict(target.kind, target.rev, target.sha, target.file, status, note=target.no_result)
    else:
        if target.kind == "impl" and material.expert_source is None:
            raise UsageError(f"task {material.task.id} has no {EXPERT_FILE}: the implementation judge compares with it")
        say(f"judging revision {target.rev} ({target.kind}: {target.file}) of {ref.id}")
        verdict = run_judge(
            _resolve(provider),
            judge_input(target, material),
            max_reasks=max_reasks,
            temperature=temperature,
            policy=policy,
            sleep=sleep,
            progress=say,
        )
    if sample is not None:  # (group, sample, group size) of judge_samples
        verdict = verdict.model_copy(update={"group": sample[0], "sample": sample[1], "group_size": sample[2]})
    [event] = append_events(ref, [JudgeVerdict(rev=target.rev, verdict=verdict.model_dump(mode="json"))], lock_wait_s=lock_wait_s)
    assert isinstance(event, JudgeVerdict)
    return JudgeOutcome(verdict, event)


def find_judgement(view: SessionView, rev: int | None = None, kind: VerdictKind | None = None) -> Judgement:
    """The judgement reviewed: of `rev` (None: the revision with the latest verdict) and `kind` (None: the
    session's). SessionError when there is no verdict to review."""
    kind = kind or session_kind(view)
    found = judgements(view.events)
    if rev is None:
        latest = found.latest(kind)
        if latest is None:
            raise SessionError(
                f"session {view.ref.id} has no judge verdict to review: run `d2k-workbench judge {view.ref.id}` first"
            )
        return latest
    _revision(view, rev)
    judgement = found.get((kind, rev))
    if judgement is None or judgement.verdict is None:
        raise SessionError(f"revision {rev} of session {view.ref.id} has no judge verdict: run `d2k-workbench judge` on it first")
    return judgement


def record_review(
    store: SessionStore,
    ref: SessionRef,
    level: Level,
    *,
    reason: str,
    score: float | None = None,
    author: str | None = None,
    rev: int | None = None,
    kind: VerdictKind | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ReviewRecord:
    """Confirm (`score` None) or change one level's score of a verdict, with a reason, and append the review."""
    check_writable(store, ref)
    view = store.load(ref)
    judgement = find_judgement(view, rev, kind)
    original = judgement.judge_score(level)
    if score is None:
        if original is None:
            raise UsageError(f"{level} of revision {judgement.rev} has no valid judge score to confirm: give a score")
        score = original
    try:
        review = ReviewRecord(
            level=level,
            score=score,
            kind=judgement.kind,
            action="confirm" if original is not None and score == original else "change",
            original_score=original,
            previous_score=judgement.effective(level),
            verdict_seq=judgement.verdict_seq,
            author=(author or default_author()).strip(),
            reason=reason.strip(),
            time=clock(),
        )
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise UsageError(f"review: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    append_events(ref, [Review(rev=judgement.rev, review=review.model_dump(mode="json"))], lock_wait_s=lock_wait_s)
    return review


# --- what the review screen shows -------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewMaterial:
    """One revision for the review screen: the candidate's text, the judgement (None: not judged yet), the
    task's material (None with `problem` when the task or its rubric cannot be read)."""

    view: SessionView
    kind: VerdictKind
    rev: int
    file: str
    text: str
    judgement: Judgement | None
    material: TaskMaterial | None
    problem: str = ""


def default_review_rev(view: SessionView) -> int | None:
    """The revision with the latest verdict, else the submission, else the newest revision."""
    latest = judgements(view.events).latest(session_kind(view))
    if latest is not None:
        return latest.rev
    if view.state.submission is not None and view.state.submission.rev is not None:
        return view.state.submission.rev
    return max(view.state.revisions) if view.state.revisions else None


def load_material(store: SessionStore, ref: SessionRef, catalog: Catalog, rev: int | None = None) -> ReviewMaterial:
    """Everything the review screen shows for revision `rev` (None: `default_review_rev`)."""
    view = store.load(ref)
    kind = session_kind(view)
    rev = rev if rev is not None else default_review_rev(view)
    if rev is None or rev not in view.state.revisions:
        raise UsageError(f"session {ref.id} has no revision {rev if rev is not None else ''} to review".replace("  ", " "))
    revision = view.state.revisions[rev]
    file = DESIGN_FILE if kind == "design" else view.config.solution
    workspace = store.workspace(ref)
    if kind == "design":
        raw = workspace.read_bytes(revision.sha, DESIGN_FILE)
        text = canonical_design(raw) if raw is not None else ""
    else:
        text = workspace.read_text(revision.sha, file) or ""
    judgement = judgements(view.events).get((kind, rev))
    try:
        material: TaskMaterial | None = task_material(catalog, view.config.task)
        problem = ""
    except WorkbenchError as exc:  # a missing rubric, a bad task file (CatalogError)
        material, problem = None, exc.message
    return ReviewMaterial(view, kind, rev, file, text, judgement, material, problem)
