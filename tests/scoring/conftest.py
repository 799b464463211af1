"""A small benchmark of synthetic sessions whose every metric is computed by hand in the tests.

Two tasks: muon_orthogonalize (a real task: its roofline formulas apply) with workloads W1, W2, and
toy_task (not in the catalogue) with workloads v1, v2. Latencies in ms as (candidate, reference):

| model   | guidance | task | revisions (turn: result)                                              | final       |
|---------|----------|------|------------------------------------------------------------------------|-------------|
| model-a | none     | muon | 0: runtime_error; 3: W1 (4,4) W2 (2,8) = 2.0x; 7: W1 (2,4) W2 (1,8) = 4.0x | 4.0x        |
| model-a | none     | toy  | 0: runtime_error; 5: v1 (1,2) passed, v2 incorrect_numerical           | failed      |
| model-b | none     | muon | 2: W1 (4,4) W2 (8,8) = 1.0x                                            | 1.0x        |
| model-b | none     | toy  | 4: v1 (1,1.5) = 1.5x                                                   | 1.5x        |
| model-a | L1       | muon | 2: W1 (1,4) W2 (1,8) = sqrt(32) = 5.657x                               | 5.657x      |
| model-a | L1       | toy  | 3: v1 (1,3) v2 (1,3) = 3.0x                                            | 3.0x        |
| model-a | design   | muon | a design proposal judged L1 40, L2 50, L3 60                            | JS_design 50 |

Judge: model-a/none/muon rev 3: 60, 70, 80 with L3 reviewed to 50; model-b/none/muon: 50, invalid, 40;
model-b/none/toy: 90, 90, 90. model-a/none sessions: per turn 100 uncached, 1000 cache read, 10 cache
write, 20 output (5 reasoning) tokens and $0.50.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from workbench.llm.usage import Usage
from workbench.scoring.testing import Step, review, scored_session, timed, verdict

MUON = "muon_orthogonalize"
TOY = "toy_task"
W1, W2 = "b32_m2048_n5464", "b32_m4096_n11008"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
RICH_USAGE = Usage(uncached_input=100, cache_read=1000, cache_write=10, output=20, reasoning=5)


def when(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture(scope="session")
def bench_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench") / "sessions"
    root.mkdir()
    a_none = {"model": "model-a", "usage": RICH_USAGE, "cost_usd": 0.5}
    scored_session(
        root,
        MUON,
        [
            Step(0, timed(MUON, {W1: (4, 4), W2: (8, 8)}, status="runtime_error")),
            Step(3, timed(MUON, {W1: (4, 4), W2: (2, 8)})),
            Step(7, timed(MUON, {W1: (2, 4), W2: (1, 8)})),
        ],
        verdicts=[(3, verdict(60, 70, 80))],
        reviews=[(3, review("L3", 50, original=80))],
        created=when(1),
        session_id="a-none-muon",
        **a_none,  # type: ignore[arg-type]
    )
    scored_session(
        root,
        TOY,
        [
            Step(0, timed(TOY, {"v1": (1, 1), "v2": (1, 1)}, status="runtime_error")),
            Step(5, timed(TOY, {"v1": (1, 2), "v2": (1, 2)}, failing={"v2": "incorrect_numerical"})),
        ],
        created=when(2),
        session_id="a-none-toy",
        **a_none,  # type: ignore[arg-type]
    )
    scored_session(
        root,
        MUON,
        [Step(2, timed(MUON, {W1: (4, 4), W2: (8, 8)}))],
        model="model-b",
        verdicts=[(1, verdict(50, None, 40))],
        created=when(3),
        session_id="b-none-muon",
    )
    scored_session(
        root,
        TOY,
        [Step(4, timed(TOY, {"v1": (1, 1.5)}))],
        model="model-b",
        verdicts=[(1, verdict(90, 90, 90))],
        created=when(4),
        session_id="b-none-toy",
    )
    scored_session(
        root, MUON, [Step(2, timed(MUON, {W1: (1, 4), W2: (1, 8)}))], model="model-a", guidance="L1", created=when(5),
        session_id="a-l1-muon",
    )  # fmt: skip
    scored_session(
        root, TOY, [Step(3, timed(TOY, {"v1": (1, 3), "v2": (1, 3)}))], model="model-a", guidance="L1", created=when(6),
        session_id="a-l1-toy",
    )  # fmt: skip
    scored_session(
        root,
        MUON,
        [Step(1, None)],
        model="model-a",
        agent_mode="design",
        verdicts=[(1, verdict(40, 50, 60, kind="design"))],
        created=when(7),
        session_id="a-design-muon",
    )
    return root


@pytest.fixture(scope="session")
def baseline_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One baseline session of muon: first correct revision W1 8 ms, W2 4 ms; final (faster) W1 4, W2 2."""
    root = tmp_path_factory.mktemp("baseline") / "sessions"
    root.mkdir()
    scored_session(
        root,
        MUON,
        [Step(1, timed(MUON, {W1: (8, 4), W2: (4, 8)})), Step(2, timed(MUON, {W1: (4, 4), W2: (2, 8)}))],
        model="base-model",
        created=when(0),
        session_id="base-muon",
    )
    return root
