"""The one code path behind live view and replay: recorded events and a position among them.

The state shown is always `SessionState` after applying the first `position` events one at a time.
Live sessions append events as they arrive and, while following, move the position to the end;
replay moves the position by steps, seeks and play. Nothing here touches Textual, git or files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.session.events import Event
from workbench.session.state import SessionState


@dataclass
class Timeline:
    """Events seen so far, how many of them are applied, and the state they give."""

    events: list[Event] = field(default_factory=list)
    position: int = 0
    state: SessionState = field(default_factory=SessionState)

    def extend(self, events: list[Event]) -> None:
        """Record newly arrived events (the position does not move)."""
        self.events.extend(events)

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

    def to_end(self) -> bool:
        return self.seek(len(self.events))

    @property
    def current(self) -> Event | None:
        """The last applied event."""
        return self.events[self.position - 1] if self.position else None
