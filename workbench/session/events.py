"""The session event log's records: versioned pydantic models, one JSON object per line.

Every record carries {"v": 1, "seq": N, "ts": unix seconds, "type": ...}. `seq` starts at 1 and has
no gaps. Besides the session, revision, evaluation, agent and judge records: `eval_skipped` (a queued
revision superseded by a newer one before it was evaluated, or the untouched template, never evaluated),
`driver_output` (lines printed by a command driver) and `driver_finished` (the driver ended).
docs/sessions.md documents every type and field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from workbench.harness.protocol.report import EvalReport, Status
from workbench.llm.usage import Usage


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    seq: int = 0  # assigned by the writer
    ts: float = 0.0  # assigned by the writer
    mac: str | None = None  # the integrity seal, added by the writer as the last field (integrity.py)


class SessionStarted(_Event):
    type: Literal["session_started"] = "session_started"
    task: str
    guidance: str
    driver: str
    device: str
    resumed: bool = False
    versions: dict[str, str] = {}


class Revision(_Event):
    type: Literal["revision"] = "revision"
    rev: int  # 1, 2, ...: revision 1 is the template
    sha: str
    files: list[str]
    author: str
    message: str = ""
    replay_of: int | None = None  # replay sessions: the recorded session's revision number written here


class EvalStarted(_Event):
    type: Literal["eval_started"] = "eval_started"
    rev: int
    sha: str
    device: str


class EvalFinished(_Event):
    type: Literal["eval_finished"] = "eval_finished"
    rev: int
    sha: str
    report: EvalReport


class EvalSkipped(_Event):
    """A revision not evaluated: superseded in the queue by a newer one before its evaluation began, or the
    session's first revision, the task's template as the session was created (reason "template")."""

    type: Literal["eval_skipped"] = "eval_skipped"
    rev: int
    sha: str
    superseded_by: int | None = None
    reason: Literal["superseded", "template"] = "superseded"


class ModelCall(_Event):
    type: Literal["model_call"] = "model_call"
    turn: int
    model: str
    usage: Usage
    cost_usd: float | None = None
    latency_s: float
    stop_reason: str = ""
    text: str = ""
    message: dict[str, Any] = {}  # the whole assistant turn (workbench.llm.AssistantTurn): a resume rebuilds it


class ModelRetry(_Event):
    """A model call that failed transiently (429, 5xx, timeout) and is tried again after `wait_s`."""

    type: Literal["model_retry"] = "model_retry"
    turn: int
    attempt: int  # 1 for the first retry
    wait_s: float
    status: int | None = None  # the HTTP status, if any
    message: str


class ToolCall(_Event):
    type: Literal["tool_call"] = "tool_call"
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any] = {}


class ToolResult(_Event):
    type: Literal["tool_result"] = "tool_result"
    turn: int
    call_id: str
    ok: bool
    content: str


class DriverOutput(_Event):
    type: Literal["driver_output"] = "driver_output"
    stream: Literal["stdout", "stderr"]
    text: str


# How a session's run ended, for what counts as a result: "completed" (the driver ran to its end: the
# agent submitted, ran out of budget, a command exited 0, a replay finished, someone stopped it),
# "agent_failed" (the agent's own failure: a command agent's non-zero exit), "infrastructure" (never started
# or broken by what is not the agent: the provider unreachable, authentication, quota, server errors, a
# command that is not there, the sandbox, the driver itself). Infrastructure outcomes are never a result.
Outcome = Literal["completed", "agent_failed", "infrastructure"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


class DriverFinished(_Event):
    """The driver ended (a command exited, a replay completed, a human went idle or was stopped)."""

    type: Literal["driver_finished"] = "driver_finished"
    driver: str
    reason: str
    exit_code: int | None = None  # command driver: the command's exit status
    outcome: Outcome | None = None  # None in logs written before outcomes were recorded (state.outcome_of)


class SessionExcluded(_Event):
    """Someone set the session aside: reports do not count it, and say so with the reason."""

    type: Literal["session_excluded"] = "session_excluded"
    reason: str


class SessionIncluded(_Event):
    """An excluded session counted again."""

    type: Literal["session_included"] = "session_included"
    reason: str = ""


class Submission(_Event):
    type: Literal["submission"] = "submission"
    rev: int | None  # None: no revision passed
    sha: str | None = None
    geomean_speedup: float | None = None
    reason: str


class JudgeVerdict(_Event):
    type: Literal["judge_verdict"] = "judge_verdict"
    rev: int
    verdict: dict[str, Any]


class Review(_Event):
    type: Literal["review"] = "review"
    rev: int
    review: dict[str, Any]


class Regrade(_Event):
    """A revision evaluated again from its committed file by a later harness (`d2k-workbench regrade`): its
    latest regrade's `report` replaces its eval_finished report wherever the session's result is read."""

    type: Literal["regrade"] = "regrade"
    rev: int
    sha: str
    harness_version: str  # the harness that made `report` (harness/host/version.py)
    old_harness_version: str = ""  # the one of the grade it replaces ("": a report older than the versions)
    old_status: Status | None = None  # the replaced grade's status (None: never evaluated before)
    status: Status
    old_geomean_speedup: float | None = None
    geomean_speedup: float | None = None
    report: EvalReport


class SessionFinished(_Event):
    type: Literal["session_finished"] = "session_finished"
    reason: str
    submission_rev: int | None = None


class Error(_Event):
    type: Literal["error"] = "error"
    message: str
    where: str = ""


Event = Annotated[
    SessionStarted
    | Revision
    | EvalStarted
    | EvalFinished
    | EvalSkipped
    | ModelCall
    | ModelRetry
    | ToolCall
    | ToolResult
    | DriverOutput
    | DriverFinished
    | SessionExcluded
    | SessionIncluded
    | Submission
    | JudgeVerdict
    | Review
    | Regrade
    | SessionFinished
    | Error,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: tuple[str, ...] = tuple(
    str(model.model_fields["type"].default) for model in get_args(get_args(Event)[0])
)  # "session_started", "revision", ...: every record's `type`, in the order above
