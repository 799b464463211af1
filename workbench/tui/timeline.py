"""The one code path behind live view and replay: recorded events and a position among them.

The state shown is always `SessionState` after applying the first `position` events one at a time.
Live sessions append events as they arrive and, while following, move the position to the end;
stepping moves the position by revision (to where each revision's evaluation ended), by event, to the
start or end, or plays. An agent's usage (turns, tokens, cost) is indexed too, so that it is known as of
any position at once. Nothing here touches Textual, git or files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.session.events import EvalFinished, EvalSkipped, EvalStarted, Event, Revision, Submission
from workbench.session.state import SessionState
from workbench.tui.turns import AgentUsage, UsageIndex

_REVISION_EVENTS = (Revision, EvalStarted, EvalFinished, EvalSkipped)


@dataclass
class Timeline:
    """Events seen so far, how many of them are applied, and the state they give."""

    events: list[Event] = field(default_factory=list)
    position: int = 0
    state: SessionState = field(default_factory=SessionState)
    _stops: dict[int, int] = field(default_factory=dict, init=False, repr=False)  # rev -> its stop
    _revisions: set[int] = field(default_factory=set, init=False, repr=False)
    _submission: Submission | None = field(default=None, init=False, repr=False)
    _submission_at: int = field(default=0, init=False, repr=False)
    _usage: UsageIndex = field(default_factory=UsageIndex, init=False, repr=False)

    def __post_init__(self) -> None:
        self._index(0)

    def _index(self, start: int) -> None:
        self._usage.extend(self.events[start:])
        for offset, event in enumerate(self.events[start:], start=start + 1):
            if isinstance(event, _REVISION_EVENTS):
                self._stops[event.rev] = offset  # after the revision's last event so far
                if isinstance(event, Revision):
                    self._revisions.add(event.rev)
            elif isinstance(event, Submission):
                self._submission, self._submission_at = event, offset

    def extend(self, events: list[Event]) -> None:
        """Record newly arrived events (the position does not move)."""
        start = len(self.events)
        self.events.extend(events)
        self._index(start)

    @property
    def revision_count(self) -> int:
        """Revisions among all recorded events (not only the applied ones)."""
        return len(self._revisions)

    @property
    def usage(self) -> AgentUsage:
        """The agent's turns, tokens and cost as of the position (only the applied events count)."""
        return self._usage.at(self.position)

    @property
    def has_agent_events(self) -> bool:
        """Some recorded event is a model call, a retry, a tool call or a tool result."""
        return self._usage.any

    @property
    def submission(self) -> Submission | None:
        """The latest submission among all recorded events, whatever the position."""
        return self._submission

    @property
    def submission_ahead(self) -> bool:
        """The recorded submission lies after the position (the state shown does not have it yet)."""
        return self._submission is not None and self._submission_at > self.position

    def revision_stops(self) -> list[int]:
        """Positions where stepping by revision stops: just after each revision's evaluation ended
        (finished or skipped), or after its latest event while it is still pending."""
        return sorted(set(self._stops.values()))

    @property
    def waiting(self) -> int:
        """Events recorded but not yet applied (shown as "N new")."""
        return len(self.events) - self.position

    @property
    def at_end(self) -> bool:
        return self.position >= len(self.events)

    def seek(self, position: int) -> bool:
        """Move to `position` (clamped); forward applies the next events, backward rebuilds from the start.

        Returns True when the position changed."""
        target = max(0, min(position, len(self.events)))
        if target == self.position:
            return False
        if target < self.position:
            self.state = SessionState()
            self.position = 0
        for event in self.events[self.position : target]:
            self.state.apply(event)
        self.position = target
        return True

    def step(self, delta: int) -> bool:
        return self.seek(self.position + delta)

    def step_revision(self, direction: int) -> bool:
        """To the next revision stop (direction > 0; the end after the last one) or the previous one
        (direction < 0; the start before the first one). Returns True when the position changed."""
        stops = self.revision_stops()
        if direction > 0:
            return self.seek(next((p for p in stops if p > self.position), len(self.events)))
        return self.seek(next((p for p in reversed(stops) if p < self.position), 0))

    def to_end(self) -> bool:
        return self.seek(len(self.events))

    @property
    def current(self) -> Event | None:
        """The last applied event."""
        return self.events[self.position - 1] if self.position else None
