"""A synthetic agent session written through the real EventWriter, with known usage and costs.

Three model turns (one retried), four tool calls (one fails), two revisions evaluated, a submission. The
sums below are worked out by hand from the events, so that the tests compare the view with them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from workbench.llm.usage import Usage
from workbench.session.config import AgentConfig, load_config, write_config
from workbench.session.events import (
    EvalFinished,
    EvalStarted,
    Event,
    ModelCall,
    ModelRetry,
    Revision,
    SessionStarted,
    ToolCall,
    ToolResult,
)
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState
from workbench.session.testing import commit_solutions, ending, first_sha, new_session, timed_report, write_events

TASK = "muon_orthogonalize"
AGENT_ID = "20261201-090000-muon_orthogonalize-a9e1"
CREATED = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
MODEL = "claude-test-1"
MAX_TURNS = 40
TEMPLATE = "def run(G, steps):\n    raise NotImplementedError\n"
KERNEL = "".join(f"# line {n}\n" for n in range(1, 19)) + "def run(G, steps):\n    return G\n"  # 20 lines

# per model turn: (uncached input, cache read, cache write, output, reasoning), cost in USD
TURNS = [
    ((1200, 0, 800, 150, 40), 0.0125),
    ((300, 2000, 0, 900, 0), 0.0230),
    ((100, 2500, 0, 60, 10), 0.0040),
]
TOTALS = {"uncached_input": 1600, "cache_read": 4500, "cache_write": 800, "output": 1110, "reasoning": 50}
TOTAL_COST = 0.0395
FIRST_TURN_COST = 0.0125
FIRST_TWO_COST = 0.0355
REFERENCE = "import torch\n\n\ndef reference(G, steps):\n    X = G / G.norm()\n    return X\n"  # 6 lines


def usage(turn: int) -> Usage:
    uncached, read, write, output, reasoning = TURNS[turn - 1][0]
    return Usage(uncached_input=uncached, cache_read=read, cache_write=write, output=output, reasoning=reasoning)


def model_call(turn: int, text: str, cost: float | None, stop: str = "tool_use") -> ModelCall:
    return ModelCall(
        turn=turn,
        model=MODEL,
        usage=usage(turn),
        cost_usd=cost,
        latency_s=1.5 * turn,
        stop_reason=stop,
        text=text,
    )


def agent_events(shas: list[str], unpriced: bool = False) -> list[Event]:
    """The session's events up to its ending (revision 1 the template, revision 2 the agent's kernel)."""
    failed = timed_report(TASK, {"smoke_b2_m64_n192": (1.0, 1.0)}, status="runtime_error", device="cpu", message="boom")
    passed = timed_report(TASK, {"smoke_b2_m64_n192": (1.0, 1.0)}, device="cpu")

    def cost(turn: int) -> float | None:
        return None if unpriced else TURNS[turn - 1][1]

    return [
        SessionStarted(task=TASK, guidance="none", driver="agent", device="cpu"),
        Revision(rev=1, sha=shas[0], files=["solution.py"], author="template", message="template"),
        EvalStarted(rev=1, sha=shas[0], device="cpu"),
        EvalFinished(rev=1, sha=shas[0], report=failed),
        model_call(1, "I will read the reference first.", cost(1)),
        ToolCall(turn=1, call_id="c1", name="read_file", arguments={"path": "task/reference.py"}),
        ToolResult(turn=1, call_id="c1", ok=True, content=REFERENCE),
        ModelRetry(turn=2, attempt=1, wait_s=2.0, status=429, message="rate limited"),
        model_call(2, "Writing the kernel now.\nIt normalises once.\nThen it iterates.\nAnd returns X.", cost(2)),
        ToolCall(turn=2, call_id="c2", name="write_file", arguments={"path": "solution.py", "content": KERNEL}),
        Revision(rev=2, sha=shas[1], files=["solution.py"], author="agent", message="write_file solution.py"),
        EvalStarted(rev=2, sha=shas[1], device="cpu"),
        EvalFinished(rev=2, sha=shas[1], report=passed),
        ToolResult(turn=2, call_id="c2", ok=True, content="wrote solution.py (20 lines): revision 2\nevaluation: passed"),
        ToolCall(turn=2, call_id="c3", name="run", arguments={"command": "python -c 'import nothing_here'"}),
        ToolResult(turn=2, call_id="c3", ok=False, content="exit 1\nModuleNotFoundError: No module named 'nothing_here'"),
        model_call(3, "Revision 2 passes; I submit it.", cost(3), stop="end_turn"),
        ToolCall(turn=3, call_id="c4", name="submit", arguments={}),
        ToolResult(turn=3, call_id="c4", ok=True, content="submitted revision 2"),
    ]


def agent_session(
    root: Path, session_id: str = AGENT_ID, unpriced: bool = False, finished: bool = True, **agent: object
) -> SessionRef:
    """The agent session under `root`: session.toml of an agent (anthropic, MODEL, MAX_TURNS turns, $5),
    a workspace of two revisions and the log above, then (`finished`) the runner's ending."""
    ref = new_session(root, TASK, TEMPLATE, session_id=session_id, created=CREATED)
    settings: dict[str, object] = {"provider": "anthropic", "model": MODEL, "max_turns": MAX_TURNS, "max_usd": 5.0}
    settings.update(agent)
    config = load_config(ref.dir).model_copy(update={"driver_config": AgentConfig.model_validate(settings)})
    write_config(ref.dir, config)
    shas = [first_sha(ref), *commit_solutions(ref, [KERNEL], author="agent")]
    written = write_events(ref, agent_events(shas, unpriced))
    if finished:
        write_events(ref, ending(SessionState.from_events(written), "agent", "the model ended its turn"))
    return ref
