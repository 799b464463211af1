"""Design mode: read-only tools, a validated design proposal, model_design.json committed, nothing evaluated."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from workbench.agent.design import SCHEMA_PATH, Design, schema_text, tool_parameters, validate_design
from workbench.agent.loop import prompt
from workbench.agent.testing import ScriptedProvider, call, turn
from workbench.session.create import DESIGN_FILE
from workbench.session.events import EvalStarted, ModelCall, Revision, Submission, ToolResult
from workbench.session.store import SessionStore

from .helpers import agent_session, of, run_agent

WORKLOADS = ["b32_m2048_n5464", "b32_m4096_n11008", "b8_m7168_n18432"]


def valid_design() -> dict[str, Any]:
    parallel = [{"workload": w, "grid": "B x triangle tiles of 128x128", "programs": None} for w in WORKLOADS]
    return {
        "summary": "Compose the five steps on the M x M Gram side in two segments; touch X only at the boundaries.",
        "l1": [
            {
                "id": "L1.square_side",
                "title": "Square-side composition",
                "change": "Carry R = X X^T and Q with X fixed; X <- Q X at the boundaries.",
                "correctness": "Exact in real arithmetic; a fixed restart bounds the fp16 drift.",
                "performance": "Ten rectangular products become four.",
                "dataflow": "R, Z, Q are fp16 [B, M, M] buffers; X stays fixed inside a segment.",
            }
        ],
        "l2": {
            "stages": [
                {
                    "id": "L2.gram",
                    "title": "Gram build",
                    "computes": "R = X X^T, lower triangle, mirrored",
                    "implements": ["L1.square_side"],
                    "placement": "operands streamed from HBM through shared memory, accumulator in registers",
                    "layout": "row-major fp16 X, 128x128 output tiles, BLOCK_K 64",
                    "ownership": "one program per lower-triangle tile, writing the tile and its mirror",
                    "lifetimes": "R lives until the next step's Z is built",
                    "reuse": "the R buffer is reused after the restart",
                    "parallelism": parallel,
                },
                {
                    "id": "L2.apply",
                    "title": "Boundary apply",
                    "computes": "X1 = Q X0",
                    "implements": ["L1.square_side"],
                    "placement": "HBM to registers",
                    "layout": "128x256 tiles",
                    "ownership": "one program per output tile",
                    "lifetimes": "X0 freed after the apply",
                    "reuse": "Q row panels reused from L2",
                    "parallelism": parallel,
                },
            ],
            "edges": [{"source": "L2.gram", "target": "L2.apply", "data": "Q, fp16 [B, M, M]", "ordering": "launch order"}],
            "adoption_checks": ["every registered workload within tolerance", "faster than the stepwise kernels"],
        },
        "l3": [
            {
                "id": "L3.triangle_tiles",
                "title": "Triangle tiles with mirrored stores",
                "mechanism": "Launch B x T(T+1)/2 programs and store tl.trans of off-diagonal tiles.",
                "serves": ["L2.gram", "L1.square_side"],
                "pitfalls": ["forgetting the mirror leaves stale values"],
                "measure": ["time of the Gram kernel against a full grid"],
            }
        ],
    }


def test_the_shipped_schema_is_generated_from_the_models() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), "run: python -m workbench.agent.design"
    parameters = tool_parameters()
    assert parameters["required"] == ["design"] and "L2Stage" in parameters["$defs"]
    assert json.dumps(parameters).count("#/$defs/") >= 5  # references resolve from the parameters' root


def test_a_valid_design_validates_and_broken_references_are_named() -> None:
    design, problems = validate_design(valid_design(), WORKLOADS)
    assert isinstance(design, Design) and not problems
    broken = copy.deepcopy(valid_design())
    broken["l2"]["stages"][0]["implements"] = ["L1.missing"]
    broken["l2"]["edges"][0]["target"] = "L2.nowhere"
    broken["l3"][0]["serves"] = ["L2.gram", "L1.absent"]
    broken["l2"]["stages"][1]["parallelism"] = broken["l2"]["stages"][1]["parallelism"][:2]
    design, problems = validate_design(broken, WORKLOADS)
    assert design is None
    text = "\n".join(problems)
    assert "L2.gram.implements names 'L1.missing', which is no L1 entry" in text
    assert "l2.edges[0].target names 'L2.nowhere', which is no L2 stage" in text
    assert "L3.triangle_tiles.serves names 'L1.absent'" in text
    assert "L2.apply.parallelism leaves out the registered workload(s) b8_m7168_n18432" in text
    missing = copy.deepcopy(valid_design())
    del missing["l1"][0]["correctness"]
    missing["l3"][0]["id"] = "L2.wrong_level"
    _, problems = validate_design(missing, WORKLOADS)
    assert any(p.startswith("l1.0.correctness: Field required") for p in problems)
    assert any(p.startswith("l3.0.id: String should match pattern") for p in problems)


def test_design_mode_reads_submits_an_invalid_design_then_a_valid_one(store: SessionStore) -> None:
    ref = agent_session(store, agent_mode="design", guidance="L1", max_turns=10)
    assert not (ref.workspace / "solution.py").exists()  # no template in a design session
    brief = (ref.workspace / "BRIEF.md").read_text()
    assert "propose a design" in brief and "submit_design" in brief and "b8_m7168_n18432" in brief
    assert (ref.workspace / "task" / "guidance.md").is_file()
    invalid = copy.deepcopy(valid_design())
    invalid["l3"][0]["serves"] = ["L2.unknown"]
    provider = ScriptedProvider(
        [
            turn(call("list_files"), call("read_file", path="task/task.toml")),
            turn(call("write_file", path="solution.py", content="x = 1\n")),  # no such tool in design mode
            turn(call("submit_design", design=invalid)),
            turn(call("submit_design", design=json.dumps(valid_design()))),  # a JSON string is accepted too
        ]
    )
    result = run_agent(store, ref, provider)
    assert result.reason == f"the agent submitted a valid design ({DESIGN_FILE})"
    events = store.load(ref).events
    assert [c.turn for c in of(events, ModelCall)] == [1, 2, 3, 4]  # the invalid design cost a turn
    results = of(events, ToolResult)
    assert [r.ok for r in results] == [True, True, False, False, True]
    assert results[2].content.startswith("unknown tool 'write_file'; the tools are: list_files, read_file, submit_design")
    assert "the design is not valid (1 problem(s))" in results[3].content and "'L2.unknown'" in results[3].content
    assert [t.name for t in provider.seen[0].tools] == ["list_files", "read_file", "submit_design"]
    assert provider.seen[0].system == prompt("design")
    saved = json.loads((ref.workspace / DESIGN_FILE).read_text())
    assert saved == Design.model_validate(valid_design()).model_dump(mode="json")
    revisions = of(events, Revision)
    assert [r.rev for r in revisions] == [1, 2] and revisions[1].files == [DESIGN_FILE]
    assert not of(events, EvalStarted)  # a design session evaluates nothing
    (submission,) = of(events, Submission)
    assert submission.rev is None and "design session" in submission.reason
    assert not (ref.workspace / "solution.py").exists()


@pytest.mark.parametrize("design", [None, "not json", [1, 2]])
def test_a_design_that_is_not_an_object_is_an_error_result(store: SessionStore, design: Any) -> None:
    ref = agent_session(store, agent_mode="design", max_turns=2)
    run_agent(store, ref, ScriptedProvider([turn(call("submit_design", design=design))], then=turn(text="giving up")))
    (result,) = of(store.load(ref).events, ToolResult)
    assert not result.ok and ("not valid" in result.content or "not JSON" in result.content)
    assert not (ref.workspace / DESIGN_FILE).exists()
