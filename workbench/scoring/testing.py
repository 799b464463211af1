"""Synthetic sessions to score, for tests: written through the real session pieces (`session.testing`: the
folder as `session new` makes it, the log through the runner's EventWriter), so scoring reads them exactly
as it reads recorded sessions.

    ref = scored_session(root, "muon_orthogonalize", [Step(3, timed("t", {"w1": (2.0, 4.0)}))],
                         model="gpt-x", guidance="L1", verdicts=[(1, verdict(60, 70, 80))])

`Step(turn, report)` is one revision, written at that turn of an agent session (revision order otherwise),
and evaluated with `report` (None: never evaluated). An agent session gets one `model_call` per turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench.catalog.guidance import GuidanceConfig
from workbench.harness.protocol.report import EvalReport, Status, WorkloadResult, overall_status
from workbench.judge.verdict import LEVELS, Level, LevelVerdict, ReviewRecord, VerdictKind, VerdictRecord
from workbench.llm.usage import Usage
from workbench.scoring.verdicts import js
from workbench.session.config import AgentConfig, AgentMode, load_config, write_config
from workbench.session.events import (
    DriverFinished,
    Event,
    JudgeVerdict,
    ModelCall,
    Outcome,
    Review,
    SessionFinished,
    SessionStarted,
    Submission,
)
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState, select_submission
from workbench.session.testing import evaluated_revision, new_session, timed_report, write_events

DEVICE = "NVIDIA H200"


@dataclass(frozen=True)
class Step:
    turn: int
    report: EvalReport | None


def timed(
    task: str,
    timings: Mapping[str, tuple[float, float]],
    *,
    status: Status = "passed",
    failing: Mapping[str, Status] | None = None,
    skipped: Sequence[str] = (),
    device_name: str = DEVICE,
) -> EvalReport:
    """An evaluation on a GPU: per workload (latency ms, reference ms), all with `status` except the workloads
    named in `failing` (their status; the evaluation then has the first of them) and those in `skipped` (more
    device memory than the GPU had: no latency, no verdict; the evaluation's status as the harness decides it)."""
    report = timed_report(task, timings, status=status, device="cuda")
    failing = failing or {}
    workloads = [w.model_copy(update={"status": failing[w.name]}) if w.name in failing else w for w in report.workloads]
    workloads = [
        WorkloadResult(name=w.name, status="skipped", message=SKIP_MESSAGE) if w.name in skipped else w for w in workloads
    ]
    overall = next((failing[w.name] for w in report.workloads if w.name in failing), status)
    overall = overall_status(workloads, []) if skipped and overall == "passed" else overall
    return report.model_copy(update={"device_name": device_name, "workloads": workloads, "status": overall})


SKIP_MESSAGE = "needs 192 GiB of device memory, this GPU has 139.8 GiB"


def untimed(task: str, workloads: Sequence[str], *, status: Status = "passed") -> EvalReport:
    """An evaluation on the CPU (Triton interpreter): statuses, no latencies."""
    return EvalReport(
        task=task,
        solution="/tmp/solution.py",
        device="cpu",
        status=status,
        workloads=[WorkloadResult(name=name, status=status, trials=2) for name in workloads],
        device_name="cpu (Triton interpreter)",
    )


SYNTHETIC_TIME = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def verdict(l1: float | None, l2: float | None, l3: float | None, *, kind: VerdictKind = "impl") -> dict[str, Any]:
    """A judge verdict dict of the judge's shape (workbench.judge.verdict); None: an invalid level."""
    scores = dict(zip(LEVELS, (l1, l2, l3), strict=True))
    levels = {
        level: LevelVerdict(
            score=score, valid=score is not None, invalid=score is None, errors=[] if score is not None else ["synthetic"]
        )
        for level, score in scores.items()
    }
    record = VerdictRecord(
        kind=kind,
        judge="synthetic-judge",
        provider="",
        rev=0,
        sha="",
        file="solution.py" if kind == "impl" else "model_design.json",
        levels=levels,
        complete=all(score is not None for score in scores.values()),
        js=js(scores),
        time=SYNTHETIC_TIME,
    )
    return record.model_dump(mode="json")


def review(
    level: Level, score: float, *, author: str = "reviewer", original: float | None = None, kind: VerdictKind = "impl"
) -> dict[str, Any]:
    """A review dict of the judge's shape (workbench.judge.verdict.ReviewRecord)."""
    record = ReviewRecord(
        level=level,
        score=score,
        kind=kind,
        action="change",
        original_score=original,
        author=author,
        reason="synthetic review",
        time=SYNTHETIC_TIME,
    )
    return record.model_dump(mode="json")


def scored_session(
    root: Path,
    task: str,
    steps: Sequence[Step],
    *,
    model: str | None = None,
    provider: str = "openai",
    command: str = "synthetic",
    guidance: GuidanceConfig = "none",
    device: str = "cuda",
    agent_mode: AgentMode = "code",
    created: datetime | None = None,
    session_id: str | None = None,
    usage: Usage | None = None,
    cost_usd: float | None = 0.01,
    verdicts: Sequence[tuple[int, dict[str, Any]]] = (),
    reviews: Sequence[tuple[int, dict[str, Any]]] = (),
    finish: bool = True,
    outcome: Outcome | None = "completed",
    finish_reason: str = "done",
) -> SessionRef:
    """A session of `task` whose revisions are `steps`: an agent session of `model` when given (one
    model_call per turn, `usage` and `cost_usd` each), else a command session of `command`. Then the judge's
    verdicts and the reviews (rev, dict), and with `finish` the runner's ending (the submission by its rule),
    its driver's `outcome` and `finish_reason`."""
    created = created or datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    ref = new_session(
        root, task, "# template\n", driver="command", command=command, guidance=guidance, device=device, created=created,
        session_id=session_id,
    )  # fmt: skip
    config = load_config(ref.dir)
    if model is not None:
        config = config.model_copy(update={"driver_config": AgentConfig(provider=provider, model=model, mode=agent_mode)})
        write_config(ref.dir, config)
        config = load_config(ref.dir)  # validated
    events: list[Event] = [SessionStarted(task=task, guidance=guidance, driver=config.driver, device=device)]
    turn = 0
    for rev, step in enumerate(steps, start=1):
        while model is not None and turn < step.turn:
            turn += 1
            events.append(
                ModelCall(
                    turn=turn, model=model, usage=usage or Usage(uncached_input=100, output=10), cost_usd=cost_usd, latency_s=1.0
                )
            )
        events += evaluated_revision(rev, f"{rev:040x}", step.report, author="template" if rev == 1 else config.driver)
    events += [JudgeVerdict(rev=rev, verdict=data) for rev, data in verdicts]
    events += [Review(rev=rev, review=data) for rev, data in reviews]
    state = SessionState.from_events(write_events(ref, events))
    if finish:
        chosen, why = select_submission(state.ordered())
        rev_chosen = chosen.rev if chosen else None
        write_events(
            ref,
            [
                DriverFinished(driver=config.driver, reason=finish_reason, exit_code=0, outcome=outcome),
                Submission(
                    rev=rev_chosen,
                    sha=chosen.sha if chosen else None,
                    geomean_speedup=chosen.geomean_speedup if chosen else None,
                    reason=why,
                ),
                SessionFinished(reason=finish_reason, submission_rev=rev_chosen),
            ],
        )
    return ref
