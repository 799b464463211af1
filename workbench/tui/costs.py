"""What each agent session has cost so far, for the sessions table, read incrementally from the logs.

One `LogTail` per agent session: every refresh reads only the lines written since the last one, so
listing a running agent's cost every two seconds costs what its new lines cost. Sessions of other drivers
are not read (they make no model calls).
"""

from __future__ import annotations

import threading

from workbench.session.eventlog import LogTail
from workbench.session.layout import SessionRef
from workbench.session.store import SessionSummary
from workbench.tui.turns import AgentUsage


class CostTracker:
    """The usage (turns, tokens, cost) of every agent session among the rows, kept current by `update`."""

    def __init__(self) -> None:
        self._tails: dict[SessionRef, tuple[LogTail, AgentUsage]] = {}
        self._lock = threading.Lock()  # called from the sessions screen's worker threads

    def update(self, rows: list[SessionSummary]) -> dict[str, AgentUsage]:
        """Session id -> its usage so far, for the agent sessions among `rows` (others are left out)."""
        with self._lock:
            usages: dict[str, AgentUsage] = {}
            agents = {row.ref for row in rows if row.problem is None and row.driver == "agent"}
            for ref in agents:
                tail, usage = self._tails.get(ref) or (LogTail(ref.log_path), AgentUsage())
                try:
                    size = ref.log_path.stat().st_size
                except FileNotFoundError:
                    size = 0
                if size < tail.offset:  # the log was replaced (a session removed and made again): start over
                    tail, usage = LogTail(ref.log_path), AgentUsage()
                for event in tail.poll():
                    usage = usage.add(event)
                self._tails[ref] = (tail, usage)
                usages[ref.id] = usage
            for gone in set(self._tails) - agents:
                del self._tails[gone]
            return usages
