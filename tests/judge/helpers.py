"""The judge tests' candidate, sessions and scripted replies."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench.judge.testing import cite, judge_reply, level
from workbench.session.config import AgentConfig, load_config, write_config
from workbench.session.events import Event, Revision, SessionStarted
from workbench.session.layout import SessionRef
from workbench.session.testing import commit_solutions, finished_session, first_sha, new_session, timed_report, write_events

TASK = "muon_orthogonalize"
LATENCY_MS = 123.456  # a latency no prompt may show
TEMPLATE = "def run(G, steps):\n    raise NotImplementedError\n"
SOLUTION = '''"""A small candidate: its docstring.

More of the docstring.
"""

import triton
import triton.language as tl

# a comment on its own line


@triton.jit
def _gemm_kernel(p_ptr, q_ptr, c_ptr, K, BK: tl.constexpr):
    """One tile of C = P @ Q."""
    acc = tl.zeros([64, 64], dtype=tl.float32)
    for k0 in range(0, K, BK):
        acc = tl.dot(p, q, acc)
    tl.store(c_ptr, acc.to(tl.float16))


def run(G, steps):
    _gemm_kernel[(1,)](G, G, G, 64, BK=32)
    for a, b, c in COEFFS:
        X = step(X, a, b, c)
    return X
'''
BROKEN = SOLUTION.replace("return X", "return -X")

L1 = ["L1.c.square_side", "L1.c.fixed_restart", "L1.c.final_boundary"]
L2 = ["L2.c.square_state_dataflow", "L2.c.symmetric_gemm_add", "L2.c.parallel_sequential"]
L3 = ["L3.c.triangle_mirrored_diagonal", "L3.c.boundary_schedule", "L3.c.tensor_core_k_tail"]
CREATED = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)


def make_code_session(root: Path, session_id: str = "20261201-070000-muon_orthogonalize-c0de") -> SessionRef:
    reports = {
        1: timed_report(TASK, {"smoke": (LATENCY_MS, 200.0)}, status="runtime_error", device="cpu", message="boom"),
        2: timed_report(TASK, {"smoke": (LATENCY_MS, 200.0)}, device="cpu"),
        3: timed_report(TASK, {"smoke": (LATENCY_MS, 200.0)}, status="incorrect_numerical", device="cpu"),
    }
    return finished_session(root, TASK, [TEMPLATE, SOLUTION, BROKEN], reports.get, session_id=session_id, created=CREATED)


DESIGN = {
    "summary": "Compose the steps on the Gram side.",
    "l1": [{"id": "L1.compose", "title": "Compose", "change": "Carry R and Q.", "correctness": "Exact.",
            "performance": "Fewer rectangular products.", "dataflow": "Two square states."}],
    "l2": {"stages": [], "edges": [], "adoption_checks": ["check the tolerance"]},
    "l3": [{"id": "L3.tri", "title": "Triangles", "mechanism": "Compute one triangle.", "serves": ["L1.compose"],
            "pitfalls": ["stale mirror"], "measure": ["tile count"]}],
}  # fmt: skip


def make_design_session(
    root: Path, session_id: str = "20261201-070500-muon_orthogonalize-de51", *, with_design: bool = True
) -> SessionRef:
    """An agent design session whose revision 2 wrote model_design.json (written unsorted, as the agent does)."""
    ref = new_session(root, TASK, "", session_id=session_id, created=CREATED, solution_path="BRIEF.md")
    config = load_config(ref.dir).model_copy(update={"driver_config": AgentConfig(provider="openai", model="m", mode="design")})
    write_config(ref.dir, config)
    events: list[Event] = [
        SessionStarted(task=TASK, guidance="none", driver="agent", device="cpu"),
        Revision(rev=1, sha=first_sha(ref), files=["BRIEF.md"], author="template", message="template"),
    ]
    if with_design:
        [sha] = commit_solutions(ref, [json.dumps(DESIGN, indent=2) + "\n"], solution_path="model_design.json")
        events.append(Revision(rev=2, sha=sha, files=["model_design.json"], author="agent", message="design"))
    write_events(ref, events)
    return ref


def good_levels(text: str = SOLUTION) -> dict[str, dict[str, Any]]:
    """A reply whose every citation verifies against SOLUTION."""
    return {
        "L1": level(10, "The stepwise recurrence is kept.", missing=L1,
                    citations=[cite(text, "for a, b, c in COEFFS:", 2, "L1.c.square_side")]),
        "L2": level(40, "Batched launches, fused epilogue on a dense product.", realized=["L2.c.parallel_sequential"],
                    partial=["L2.c.symmetric_gemm_add"], missing=["L2.c.square_state_dataflow"],
                    citations=[cite(text, "acc = tl.zeros", 3, "L2.c.symmetric_gemm_add")]),
        "L3": level(30, "tl.dot with an fp32 accumulator, dense tiles.", partial=["L3.c.tensor_core_k_tail"],
                    missing=["L3.c.triangle_mirrored_diagonal", "L3.c.boundary_schedule"],
                    citations=[cite(text, "acc = tl.dot(p, q, acc)", 1, "L3.c.tensor_core_k_tail")]),
    }  # fmt: skip


def reply(**overrides: dict[str, Any]) -> str:
    """good_levels() with some levels replaced."""
    return judge_reply(**{**good_levels(), **overrides})


def with_citation(level_name: str, citation: dict[str, Any]) -> dict[str, Any]:
    """That level of good_levels() citing only `citation`."""
    return {**good_levels()[level_name], "citations": [citation]}


def paraphrased() -> dict[str, Any]:
    """L3 quoting its line in other words."""
    return with_citation("L3", {**cite(SOLUTION, "acc = tl.dot(p, q, acc)", 1, "L3.c.tensor_core_k_tail"),
                                "quote": "        acc += tl.dot(p, q)"})  # fmt: skip


def comment_only() -> dict[str, Any]:
    """L2 citing a comment."""
    return with_citation("L2", cite(SOLUTION, "# a comment on its own line", 1, "L2.c.symmetric_gemm_add"))


def docstring_only() -> dict[str, Any]:
    """L2 citing a docstring."""
    return with_citation("L2", cite(SOLUTION, '"""One tile of C = P @ Q."""', 1, "L2.c.symmetric_gemm_add"))


def out_of_range() -> dict[str, Any]:
    """L1 citing lines past the end."""
    return with_citation("L1", {"file": "solution.py", "start_line": 200, "end_line": 202, "quote": "x",
                                "criterion": "L1.c.square_side"})  # fmt: skip


BROKEN_LEVEL = {"paraphrased": "L3", "comment_only": "L2", "docstring_only": "L2", "out_of_range": "L1"}
