"""Session records -> `Results`: per model (group), guidance configuration and task, the paper's metrics.

    results = score(collect(paths).records, baseline=reference_baseline(), catalog=catalog)

Groups come from the sessions' own metadata: an agent session by its model (session.toml, else its
`model_call` events), other sessions by driver and command (replays by the session they replay). The tasks
of a report are every task any of its code sessions attempted; each group and configuration that has a
session is scored over all of them (a task it did not run counts as failed). Where several sessions share a
group, configuration and task, the latest (by creation) counts and the others are listed as superseded.
Design proposals (agent_mode = "design") contribute JS_design only.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from workbench.catalog import CONFIGS, Catalog
from workbench.catalog.imported import IMPORTED_LABEL
from workbench.errors import UsageError
from workbench.llm.usage import Spend
from workbench.scoring import metrics
from workbench.scoring.baseline import Baseline, check_devices, reference_baseline
from workbench.scoring.records import Group, RevisionRecord, SessionRecord
from workbench.scoring.roofline import Roofline
from workbench.scoring.verdicts import LEVELS, Level, js, zero_levels
from workbench.session.state import older_harness


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


def p_key(p: float) -> str:
    """fast_p's key in `fast_p` dicts: "1", "1.5", "2"."""
    return f"{p:g}"


class WorkloadScore(_Model):
    name: str
    status: str
    latency_ms: float | None
    baseline_ms: float | None
    speedup: float | None
    roofline_ms: float | None = None
    roofline_fraction: float | None = None
    library_ms: float | None = None  # the task's library baseline, timed in the same evaluation
    library_speedup: float | None = None


class TaskCell(_Model):
    """One group, configuration and task: the final submission of the session that counts."""

    group: str
    config: str
    task: str
    repetition: int = 1  # which repetition of the configuration (a campaign's r1, r2, ...)
    session: str | None = None  # None: the group ran no session of this task in this configuration
    superseded: list[str] = []  # earlier sessions of the same cell, not counted
    rev: int | None = None  # the submitted revision
    status: str = "not run"  # the submission's status, else the last evaluation's, "not evaluated" or "not run"
    correct: bool = False
    speedup: float | None = None  # task speedup against the baseline (None: failed or untimed)
    device_name: str = ""
    workloads: list[WorkloadScore] = []
    levels: dict[Level, float | None] | None = None  # effective judge scores (0 for a failed task); None: not judged
    js_impl: float | None = None
    harness_version: str | None = None  # the harness that graded the status shown (None: not evaluated, "": unrecorded)
    older_harness: bool = False  # graded by another harness than this one (`d2k-workbench regrade` grades it again)

    @property
    def skipped(self) -> bool:
        """Its evaluation was skipped: the task's workloads need more device memory than the GPU had. Neither
        correct nor failed: left out of every figure and counted apart."""
        return not self.correct and self.status == "skipped"

    @property
    def outcome(self) -> metrics.TaskOutcome:
        return metrics.TaskOutcome(self.correct, self.speedup)


class TaskRuns(_Model):
    """One group, configuration and task over its repetitions: how many ran and were correct, and the geometric
    mean of the task speedups of the correct, timed runs with their spread (the paper's per-task geometric
    mean, before the mean across tasks)."""

    cells: list[TaskCell]

    @property
    def runs(self) -> int:
        return len(self.cells)

    @property
    def ran(self) -> int:
        return sum(c.session is not None for c in self.cells)

    @property
    def correct(self) -> int:
        return sum(c.correct for c in self.cells)

    @property
    def skipped(self) -> int:
        """Runs skipped for want of device memory (neither correct nor failed)."""
        return sum(c.skipped for c in self.cells)

    @property
    def speedups(self) -> list[float]:
        return [c.speedup for c in self.cells if c.correct and c.speedup is not None]

    @property
    def speedup(self) -> float | None:
        """The geometric mean over the correct, timed runs (None when there are none)."""
        return metrics.geomean(self.speedups) if self.speedups else None

    @property
    def speedup_sd(self) -> float | None:
        """The sample standard deviation of those speedups (None for fewer than two)."""
        return statistics.stdev(self.speedups) if len(self.speedups) > 1 else None

    def workload_means(self) -> list[WorkloadScore]:
        """Per workload over the correct runs: the mean latencies and roofline fraction, the geometric-mean
        speedup (in the order the first run lists them)."""
        names = list(dict.fromkeys(w.name for c in self.cells for w in c.workloads))
        out: list[WorkloadScore] = []
        for name in names:
            each = [w for c in self.cells for w in c.workloads if w.name == name]
            speedups = [w.speedup for w in each if w.speedup is not None and w.speedup > 0]
            library = [w.library_speedup for w in each if w.library_speedup is not None and w.library_speedup > 0]
            out.append(
                WorkloadScore(
                    name=name,
                    status=each[-1].status,
                    latency_ms=_mean([w.latency_ms for w in each]),
                    baseline_ms=_mean([w.baseline_ms for w in each]),
                    speedup=metrics.geomean(speedups) if speedups else None,
                    roofline_ms=_mean([w.roofline_ms for w in each]),
                    roofline_fraction=_mean([w.roofline_fraction for w in each]),
                    library_ms=_mean([w.library_ms for w in each]),
                    library_speedup=metrics.geomean(library) if library else None,
                )
            )
        return out


class Curve(_Model):
    """S'perf over steps (turns of agent sessions, else revisions): (step, value) where the value changes."""

    group: str
    config: str
    axis: Literal["turn", "revision"]
    points: list[tuple[int, float]]

    def value_at(self, step: int) -> float | None:
        return metrics.value_at(self.points, step)


class GroupScores(_Model):
    """One group in one configuration, over all the report's tasks."""

    group: str
    config: str
    sessions: int
    tasks: int  # the tasks scored: every task of the report but those skipped
    passed: int
    correctness: float | None
    sperf: float | None
    geomean_speedup: float | None  # only when every task is correct and timed
    fast_p: dict[str, float | None]
    levels: dict[Level, float | None]
    js_impl: float | None
    judged: int  # tasks with a valid JS_impl
    untimed: int  # correct tasks without a speedup
    curve: Curve | None = None
    skipped: int = 0  # tasks whose evaluation was skipped (more device memory than the GPU had): in no figure
    # Repetitions of the configuration (a campaign's r1, r2, ...): the figures above are their means (the
    # geometric mean for the all-correct speedup); the spread is the sample standard deviation over them.
    repetitions: int = 1
    sperf_each: list[float | None] = []  # S_perf of each repetition, in order
    sperf_sd: float | None = None
    correctness_sd: float | None = None


class DesignScores(_Model):
    group: str
    sessions: int
    judged: int
    levels: dict[Level, float | None]
    js_design: float | None


class TokenRow(_Model):
    group: str
    config: str  # a guidance configuration, or "design"
    sessions: int
    turns: int | None  # model turns of its agent sessions; None: no agent sessions (a human's, a command's)
    tokens: Spend


class OverallScores(_Model):
    """One configuration over every group: pairs are (group, task)."""

    config: str
    groups: int
    pairs: int  # model-task pairs scored (skipped ones aside)
    passed: int
    correctness: float | None
    sperf: float | None  # geometric mean of the groups' S_perf
    fully_correct: list[str]  # groups correct and timed on every task in every configuration
    geomean_speedup: float | None  # over the pairs of those groups
    fast_p: dict[str, float | None]
    skipped: int = 0  # pairs whose evaluation was skipped (more device memory than the GPU had): in no figure


class GroupInfo(_Model):
    label: str
    driver: str
    provider: str | None = None
    model: str | None = None
    command: str | None = None
    from_session: str | None = None
    sessions: int = 0


class Provenance(_Model):
    sessions: list[str]
    device_model: str | None  # the one device model of every compared latency (None: nothing timed)
    first_created: datetime | None
    last_created: datetime | None
    baseline: str
    baseline_sessions: list[str] = []
    generated: datetime
    set_aside: int = 0  # sessions read and not counted (infrastructure failures, exclusions)
    timed_sessions: int = 0  # sessions with a timed evaluation (on `device_model`)
    untimed_sessions: int = 0  # sessions with none (evaluated on the CPU, or never evaluated): no latency

    def caption(self) -> str:
        """One line: sessions, device, dates, baseline."""
        first, last = self.first_created, self.last_created
        dates = (
            "-"
            if first is None or last is None
            else f"{first:%Y-%m-%d}" + (f" to {last:%Y-%m-%d}" if last.date() != first.date() else "")
        )
        aside = f" ({self.set_aside} more not counted)" if self.set_aside else ""
        device = f"device: {self.device_model} ({self.timed_sessions} timed)" if self.device_model else "device: none"
        untimed = f" · {self.untimed_sessions} untimed (CPU or not evaluated: no latency)" if self.untimed_sessions else ""
        return f"{len(self.sessions)} session(s){aside} · {device}{untimed} · sessions of {dates} · baseline: {self.baseline}"


class SetAside(_Model):
    """A session that is not a result: broken by infrastructure, or excluded by a person (`why` says which)."""

    session: str
    task: str
    why: str


class Results(_Model):
    provenance: Provenance
    tasks: list[str]
    configs: list[str]
    groups: list[GroupInfo]
    cells: list[TaskCell]
    scores: list[GroupScores]
    design: list[DesignScores]
    tokens: list[TokenRow]
    overall: list[OverallScores]
    notes: list[str]
    set_aside: list[SetAside] = []  # sessions read but not counted, and why

    def cell(self, group: str, config: str, task: str) -> TaskCell | None:
        """The first repetition's cell (see task_runs for all of them)."""
        return next((c for c in self.cells if (c.group, c.config, c.task) == (group, config, task)), None)

    @property
    def repeated(self) -> bool:
        """Some configuration ran more than once (a campaign's repetitions)."""
        return any(c.repetition > 1 for c in self.cells)

    def task_runs(self, group: str, config: str, task: str) -> TaskRuns:
        """Every repetition of one group, configuration and task (none when the pair was not scored)."""
        return TaskRuns(cells=[c for c in self.cells if (c.group, c.config, c.task) == (group, config, task)])

    def group_scores(self, group: str, config: str) -> GroupScores | None:
        return next((s for s in self.scores if (s.group, s.config) == (group, config)), None)

    def overall_for(self, config: str) -> OverallScores | None:
        return next((o for o in self.overall if o.config == config), None)


# ---- grouping and selection -------------------------------------------------------------------------


def group_labels(records: Sequence[SessionRecord]) -> dict[Group, str]:
    """A label per group; groups that would share one (a model served by two providers) are told apart."""
    groups = sorted({r.group for r in records}, key=lambda g: (g.driver != "agent", g.label, g.provider or ""))
    labels: dict[Group, str] = {}
    for group in groups:
        twins = [g for g in groups if g.label == group.label]
        labels[group] = group.label if len(twins) == 1 else f"{group.label} via {group.provider or group.driver}"
    return labels


def config_order(configs: set[str]) -> list[str]:
    return [c for c in CONFIGS if c in configs] + sorted(configs - set(CONFIGS))


def filter_records(
    records: Sequence[SessionRecord],
    *,
    tasks: Sequence[str] = (),
    models: Sequence[str] = (),
    configs: Sequence[str] = (),
    device_model: str | None = None,
) -> list[SessionRecord]:
    """The records of those tasks, groups (a group's label or model name, any case) and configurations
    (empty: all) and, with `device_model`, only sessions whose every evaluation ran on a device whose name
    contains it (any case; sessions never evaluated, such as design proposals, stay). UsageError for a value
    that matches no session."""
    labels = group_labels(records)

    def names(record: SessionRecord) -> set[str]:
        return {labels[record.group].lower(), record.group.label.lower(), (record.group.model or "").lower()} - {""}

    checks = (
        ("task", tasks, lambda r: {r.task.lower()}, sorted({r.task for r in records})),
        ("model", models, names, sorted(set(labels.values()))),
        ("guidance configuration", configs, lambda r: {r.guidance.lower()}, config_order({r.guidance for r in records})),
    )
    kept = list(records)
    for what, wanted, keys, known in checks:
        if not wanted:
            continue
        lowered = {w.lower() for w in wanted}
        for value in wanted:
            if not any(value.lower() in keys(r) for r in records):
                raise UsageError(f"no session of {what} {value!r} (known: {', '.join(known) or 'none'})")
        kept = [r for r in kept if keys(r) & lowered]
    if device_model:
        needle = device_model.lower()
        evaluated_on = {r.id: [(v.device_name or r.device).lower() for v in r.revisions if v.status is not None] for r in kept}
        kept = [r for r in kept if all(needle in name for name in evaluated_on[r.id])]  # never evaluated: kept
        if not any(evaluated_on[r.id] for r in kept):
            raise UsageError(f"no session was evaluated on a device model matching {device_model!r}")
    return kept


# ---- scoring -------------------------------------------------------------------------------------------


def _cell(label: str, config: str, task: str, sessions: list[SessionRecord], baseline: Baseline, roofline: Roofline) -> TaskCell:
    if not sessions:
        return TaskCell(group=label, config=config, task=task)
    chosen = sessions[-1]
    superseded = [s.id for s in sessions[:-1]]
    submission = chosen.submission
    evaluated = [r for r in chosen.revisions if r.status is not None]
    if submission is not None and submission.status is not None:
        graded: RevisionRecord | None = submission
    else:
        graded = evaluated[-1] if evaluated else None
    status = (graded.status or "not evaluated") if graded is not None else "not evaluated"
    correct = submission is not None and submission.passed
    workloads: list[WorkloadScore] = []
    levels: dict[Level, float | None] | None = None
    if status == "skipped" and not correct:
        levels = None  # not a failure: no score of 0 from the judge either
    elif correct and submission is not None:
        device = submission.device_name or chosen.device
        for w in baseline.workload_speedups(task, submission):
            floor = roofline.floor_ms(task, w.name, device) if w.latency_ms is not None else None
            fraction = metrics.roofline_fraction(floor, w.latency_ms) if floor is not None and w.latency_ms else None
            workloads.append(WorkloadScore(**w.model_dump(), roofline_ms=floor, roofline_fraction=fraction))
        verdict = chosen.verdict("impl", submission.rev)
        levels = dict(verdict.levels) if verdict is not None else None
    else:
        levels = zero_levels()
    return TaskCell(
        group=label,
        config=config,
        task=task,
        session=chosen.id,
        superseded=superseded,
        rev=submission.rev if submission is not None else None,
        status=status,
        correct=correct,
        speedup=baseline.task_speedup(task, submission) if correct else None,
        device_name=(submission.device_name if submission is not None else "") or chosen.device,
        workloads=workloads,
        levels=levels,
        js_impl=js(levels) if levels is not None else None,
        harness_version=graded.harness_version if graded is not None else None,
        older_harness=older_harness(graded.harness_version) if graded is not None else False,
    )


def _turns(sessions: Sequence[SessionRecord]) -> int | None:
    """The model turns of these sessions' agents; None when none is an agent's (revisions are not turns)."""
    turns = [t for s in sessions if (t := s.turns) is not None]
    return sum(turns) if turns else None


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return metrics.mean(present) if present else None


def session_events(record: SessionRecord, baseline: Baseline) -> list[tuple[int, float]]:
    """A session's eligible submissions: (step, task speedup) of every passed, timed revision."""
    events = []
    for revision in record.revisions:
        speedup = baseline.task_speedup(record.task, revision)
        if speedup is not None:
            events.append((revision.step, speedup))
    return events


def session_curve(record: SessionRecord, baseline: Baseline | None = None) -> Curve:
    """S'perf over one session's steps (its one task): best eligible task speedup so far, 0.1 before."""
    points = metrics.sperf_curve([session_events(record, baseline or reference_baseline())], record.steps)
    return Curve(group=record.group.label, config=record.guidance, axis=record.axis, points=points)


def _group_scores(label: str, config: str, row: list[TaskCell], counted: list[SessionRecord], baseline: Baseline) -> GroupScores:
    cells = [c for c in row if not c.skipped]  # a skipped task is neither correct nor failed: in no figure
    outcomes = [c.outcome for c in cells]
    judged_at_all = any(s.verdict("impl") is not None for s in counted)
    if not judged_at_all:
        cells = [c.model_copy(update={"levels": None, "js_impl": None}) for c in cells]
    curve = None
    if any(r.timed for s in counted for r in s.revisions):
        by_task = {s.task: s for s in counted}
        tasks = [session_events(by_task[c.task], baseline) if c.task in by_task else [] for c in cells]
        horizon = max((s.steps for s in counted), default=0)
        axis: Literal["turn", "revision"] = "turn" if any(s.axis == "turn" for s in counted) else "revision"
        curve = Curve(group=label, config=config, axis=axis, points=metrics.sperf_curve(tasks, horizon))
    js_values = [c.js_impl for c in cells if c.js_impl is not None]
    return GroupScores(
        group=label,
        config=config,
        sessions=len(counted),
        tasks=len(cells),
        passed=sum(1 for c in cells if c.correct),
        correctness=metrics.correctness(outcomes),
        sperf=metrics.performance_score(outcomes),
        geomean_speedup=metrics.all_correct_speedup(outcomes),
        fast_p={p_key(p): metrics.fast_p(outcomes, p) for p in metrics.FAST_P},
        levels={level: _mean([c.levels[level] for c in cells if c.levels is not None]) for level in LEVELS},
        js_impl=metrics.mean(js_values) if js_values else None,
        judged=len(js_values),
        untimed=sum(1 for c in cells if c.correct and c.speedup is None),
        curve=curve,
        skipped=len(row) - len(cells),
    )


def _over_repetitions(each: list[GroupScores]) -> GroupScores:
    """One group and configuration over its repetitions: the mean of each figure (the geometric mean for the
    all-correct speedup), the S_perf of each repetition, the spread, and the counts summed (so `passed` over
    `tasks` is the fraction of correct task runs over all repetitions)."""
    if len(each) == 1:
        return each[0].model_copy(update={"sperf_each": [each[0].sperf]})
    first = each[0]

    def spread(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.stdev(present) if len(present) > 1 and len(present) == len(values) else None

    speedups = [s.geomean_speedup for s in each]
    levels = {level: _mean([s.levels.get(level) for s in each]) for level in LEVELS}
    curves = [s.curve for s in each if s.curve is not None]
    curve = None
    if curves:
        steps = sorted({step for c in curves for step, _ in c.points})
        points = [(step, statistics.fmean(v for c in curves if (v := c.value_at(step)) is not None)) for step in steps]
        curve = Curve(group=first.group, config=first.config, axis=curves[0].axis, points=points)
    return GroupScores(
        group=first.group,
        config=first.config,
        sessions=sum(s.sessions for s in each),
        tasks=sum(s.tasks for s in each),
        passed=sum(s.passed for s in each),
        correctness=_mean_of_all([s.correctness for s in each]),
        sperf=_mean_of_all([s.sperf for s in each]),
        # every repetition all-correct and timed, else none: a geometric mean over some would flatter
        geomean_speedup=metrics.geomean([v for v in speedups if v is not None]) if all(v is not None for v in speedups) else None,
        fast_p={key: _mean_of_all([s.fast_p.get(key) for s in each]) for key in first.fast_p},
        levels=levels,
        js_impl=_mean([s.js_impl for s in each]),
        judged=sum(s.judged for s in each),
        untimed=sum(s.untimed for s in each),
        curve=curve,
        skipped=sum(s.skipped for s in each),
        repetitions=len(each),
        sperf_each=[s.sperf for s in each],
        sperf_sd=spread([s.sperf for s in each]),
        correctness_sd=spread([s.correctness for s in each]),
    )


def _mean_of_all(values: Sequence[float | None]) -> float | None:
    """The mean when every repetition has a value, else None: a mean over the timed repetitions alone would
    stand for all of them (an untimed repetition that passed beside a failed one scored 0.5)."""
    if not values or any(v is None for v in values):
        return None
    return metrics.mean([v for v in values if v is not None])


def _latest_by(records: Sequence[SessionRecord]) -> list[SessionRecord]:
    return sorted(records, key=lambda r: (r.created, r.id))


def score(
    records: Sequence[SessionRecord],
    baseline: Baseline | None = None,
    catalog: Catalog | None = None,
    *,
    now: datetime | None = None,
) -> Results:
    """Score the sessions. UsageError when there are none, or the compared latencies come from several
    device models. `catalog` gives the tasks' roofline formulas (None: no roofline fractions)."""
    if not records:
        raise UsageError("no sessions to score")
    set_aside = [SetAside(session=r.id, task=r.task, why=why) for r in records if (why := r.set_aside) is not None]
    records = [r for r in records if r.set_aside is None]
    if not records:
        listed = "; ".join(f"{s.session} ({s.why})" for s in set_aside)
        raise UsageError(f"no sessions to score: every session was set aside: {listed}")
    baseline = baseline or reference_baseline()
    device_model = check_devices(records, baseline)
    labels = group_labels(records)
    code = _latest_by([r for r in records if r.mode == "code"])
    design = _latest_by([r for r in records if r.mode == "design"])
    tasks = sorted({r.task for r in code})
    configs = config_order({r.guidance for r in code})
    roofline = Roofline(catalog)
    notes: list[str] = []

    cells: list[TaskCell] = []
    scores: list[GroupScores] = []
    tokens: list[TokenRow] = []
    group_order = list(labels.values())  # agents first, then by label; unique
    for label in group_order:
        for config in configs:
            mine = [r for r in code if labels[r.group] == label and r.guidance == config]
            if not mine:
                continue
            each: list[GroupScores] = []
            counted: list[SessionRecord] = []
            for rep in sorted({r.repetition for r in mine}):  # within a repetition the latest session counts
                ours = [r for r in mine if r.repetition == rep]
                row = [
                    _cell(label, config, task, [r for r in ours if r.task == task], baseline, roofline).model_copy(
                        update={"repetition": rep}
                    )
                    for task in tasks
                ]
                counted_here = [r for r in ours if r.id in {c.session for c in row}]
                cells += row
                counted += counted_here
                each.append(_group_scores(label, config, row, counted_here, baseline))
            scores.append(_over_repetitions(each))
            tokens.append(
                TokenRow(
                    group=label,
                    config=config,
                    sessions=len(counted),
                    turns=_turns(counted),
                    tokens=sum((s.tokens for s in counted), Spend()),
                )
            )

    design_scores: list[DesignScores] = []
    for label in group_order:
        mine = [r for r in design if labels[r.group] == label]
        if not mine:
            continue
        latest = {r.task: r for r in mine}  # sorted oldest first: the latest per task wins
        per_task = []
        for record in latest.values():
            verdict = record.verdict("design")
            per_task.append(dict(verdict.levels) if verdict is not None else None)
        judged = [levels for levels in per_task if levels is not None and js(levels) is not None]
        design_scores.append(
            DesignScores(
                group=label,
                sessions=len(latest),
                judged=len(judged),
                levels={level: _mean([lv[level] for lv in per_task if lv is not None]) for level in LEVELS},
                js_design=_mean([js(lv) for lv in judged]),
            )
        )
        tokens.append(
            TokenRow(
                group=label,
                config="design",
                sessions=len(latest),
                turns=_turns(list(latest.values())),
                tokens=sum((r.tokens for r in latest.values()), Spend()),
            )
        )

    all_configs_correct = {
        label
        for label in group_order
        if (own := [s for s in scores if s.group == label])
        and len(own) == len(configs)
        and all(s.geomean_speedup is not None for s in own)
    }
    overall: list[OverallScores] = []
    for config in configs:
        in_config = [s for s in scores if s.config == config]
        pairs = [c for c in cells if c.config == config and not c.skipped]
        outcomes = [c.outcome for c in pairs]
        fully = [c.outcome for c in pairs if c.group in all_configs_correct]
        overall.append(
            OverallScores(
                config=config,
                groups=len(in_config),
                pairs=len(pairs),
                passed=sum(1 for c in pairs if c.correct),
                correctness=metrics.correctness(outcomes),
                sperf=metrics.overall_performance_score([s.sperf for s in in_config]),
                fully_correct=sorted(all_configs_correct),
                geomean_speedup=metrics.all_correct_speedup(fully),
                fast_p={p_key(p): metrics.fast_p(outcomes, p) for p in metrics.FAST_P},
                skipped=sum(1 for c in cells if c.config == config and c.skipped),
            )
        )

    skipped = sum(1 for c in cells if c.skipped)
    if skipped:
        notes.append(
            f"{skipped} model-task pair(s) skipped: their workloads need more device memory than the GPU had; "
            "counted apart (neither correct nor failed) and left out of every figure"
        )
    untimed = sum(s.untimed for s in scores)
    if untimed:
        notes.append(
            f"{untimed} correct submission(s) have no speedup (not timed, e.g. evaluated on the CPU, or no baseline): "
            "S_perf and the geometric means need every correct task timed"
        )
    superseded = [sid for c in cells for sid in c.superseded]
    if superseded:
        notes.append(
            f"{len(superseded)} earlier session(s) of the same model, configuration and task not counted: {', '.join(superseded)}"
        )
    for aside in set_aside:
        notes.append(f"not counted: {aside.session} ({aside.task}): {aside.why}")
    for task, why in sorted(baseline.missing.items()):
        notes.append(f"no baseline for {task}: {why}")
    if baseline.mode == "sessions":
        uncovered = [t for t in tasks if t not in baseline.entries and t not in baseline.missing]
        if uncovered:
            notes.append(f"no baseline session for {', '.join(uncovered)}: no speedups there")
    for record in records:
        notes += [f"{record.id}: {note}" for note in record.notes]
    imported = {r.task: r.imported_from for r in records if r.imported_from is not None}
    notes += [
        f"{task}: {IMPORTED_LABEL} ({origin}): unguided runs only, no judge scores" for task, origin in sorted(imported.items())
    ]
    notes += roofline.notes

    created = [r.created for r in records]
    provenance = Provenance(
        sessions=[r.id for r in records],
        device_model=device_model,
        first_created=min(created),
        last_created=max(created),
        baseline=baseline.description,
        baseline_sessions=sorted({e.session for e in baseline.entries.values()}),
        generated=(now or datetime.now(UTC)),
        set_aside=len(set_aside),
        timed_sessions=sum(1 for r in records if r.device_models),
        untimed_sessions=sum(1 for r in records if not r.device_models),
    )
    groups = [
        GroupInfo(
            label=labels[g],
            driver=g.driver,
            provider=g.provider,
            model=g.model,
            command=g.command,
            from_session=g.from_session,
            sessions=sum(1 for r in records if r.group == g),
        )
        for g in labels
    ]
    return Results(
        provenance=provenance,
        tasks=tasks,
        configs=configs,
        groups=groups,
        cells=cells,
        scores=scores,
        design=design_scores,
        tokens=tokens,
        overall=overall,
        notes=notes,
        set_aside=set_aside,
    )
