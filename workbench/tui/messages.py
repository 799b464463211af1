"""Typed messages that workers post to screens: every result of background work arrives as one of these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from workbench.catalog import Guidance, Task

if TYPE_CHECKING:  # annotations only: the tasks area's messages are posted before the session package loads
    from rich.text import Text

    from workbench.session.eventlog import LogTail
    from workbench.session.events import Event
    from workbench.session.layout import SessionRef
    from workbench.session.store import SessionSummary, SessionView
    from workbench.tui.code_source import CodeSource
    from workbench.tui.turns import AgentUsage


@dataclass
class TaskRow:
    """One task folder: the task with its guidance and the best result any session recorded for it, or
    (`problem` set) why the task or its guidance cannot be used (`task` is then None when it did not load)."""

    task_id: str
    task: Task | None
    guidance: Guidance | None
    best: str  # "" when no session has a passing revision
    problem: str | None = None

    @property
    def usable(self) -> bool:
        return self.task is not None and self.problem is None


class TasksLoaded(Message):
    def __init__(self, rows: list[TaskRow]) -> None:
        super().__init__()
        self.rows = rows


class SessionsLoaded(Message):
    """Every session's summary, the ids of those a runner runs now, and the agent sessions' usage so far."""

    def __init__(self, rows: list[SessionSummary], running: set[str], costs: dict[str, AgentUsage] | None = None) -> None:
        super().__init__()
        self.rows = rows
        self.running = running
        self.costs = costs or {}


class SessionLoaded(Message):
    """A session as read now (config, every event so far, their state), a tail positioned after them, and
    its solution's code by revision (None when its git history cannot be read: `problem` says why)."""

    def __init__(self, view: SessionView, tail: LogTail, running: bool, code: CodeSource | None, problem: str = "") -> None:
        super().__init__()
        self.view = view
        self.tail = tail
        self.running = running
        self.code = code
        self.problem = problem


class EventsArrived(Message):
    """New events of a live session (possibly none), and whether its runner still runs."""

    def __init__(self, events: list[Event], running: bool) -> None:
        super().__init__()
        self.events = events
        self.running = running


class CodeLoaded(Message):
    """The solution of one revision and its unified diff to the previous revision."""

    def __init__(self, rev: int, rendered: tuple[str, list[Text], str, list[Text]]) -> None:
        super().__init__()
        self.rev = rev
        self.rendered = rendered  # code, its highlighted lines, diff, its highlighted lines


class SessionLaunched(Message):
    """A session was created and its runner started (pid), with the runner's log file and what to tell the
    user (for a human session: where to edit)."""

    def __init__(self, ref: SessionRef, pid: int, log: str, notice: str) -> None:
        super().__init__()
        self.ref = ref
        self.pid = pid
        self.log = log
        self.notice = notice


class LaunchOptionsLoaded(Message):
    """For the launch dialog's task: its workloads (name, kind) and the sessions of it a replay can re-run
    (id, label), with each one's guidance (a replay keeps it)."""

    def __init__(
        self,
        task: str,
        workloads: list[tuple[str, str]],
        sources: list[tuple[str, str]],
        source_guidance: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.task = task
        self.workloads = workloads
        self.sources = sources
        self.source_guidance = source_guidance or {}
