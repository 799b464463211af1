"""Design mode: the agent's independent design proposal, in the shape of the expert guidance (L1/L2/L3).

The model submits one `Design` with `submit_design(design)`. It is validated here (pydantic): every
field present and non-empty, ids unique and of their level, every reference (an L2 stage's L1 items, an
edge's stages, an L3 mechanism's L1/L2 items) naming an item of the design, and, when the task is known
(validation context `{"workloads": [...]}`), every parallelism entry naming a registered workload. The
JSON schema the model is given ships as `model_design.schema.json` beside this file, generated from these
models (`python -m workbench.agent.design` rewrites it; a test checks it is in sync).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

SCHEMA_PATH = Path(__file__).with_name("model_design.schema.json")
DESIGN_SCHEMA_HINT = (
    "`design` is one object: `summary`; `l1`: algorithmic changes (id L1.x, change, correctness, performance, "
    "dataflow); `l2`: `stages` (id L2.x, computes, implements [L1 ids], placement, layout, ownership, lifetimes, reuse, "
    "parallelism per registered workload), `edges` (source, target, data, ordering) and `adoption_checks`; `l3`: "
    "mechanisms (id L3.x, mechanism, serves [L1/L2 ids], pitfalls, measure). Ids referenced must exist."
)

Text = Annotated[str, Field(min_length=1)]
L1Id = Annotated[str, Field(pattern=r"^L1\.[A-Za-z0-9_.-]+$", description="e.g. L1.square_side_composition")]
L2Id = Annotated[str, Field(pattern=r"^L2\.[A-Za-z0-9_.-]+$", description="e.g. L2.gram_build")]
L3Id = Annotated[str, Field(pattern=r"^L3\.[A-Za-z0-9_.-]+$", description="e.g. L3.triangle_tiles")]
ItemRef = Annotated[str, Field(pattern=r"^L[12]\.[A-Za-z0-9_.-]+$", description="the id of an L1 entry or an L2 stage")]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class L1Entry(_Part):
    """One algorithmic change and what it implies."""

    id: L1Id
    title: Text
    change: Text = Field(description="The change to the computation, against the reference's algorithm.")
    correctness: Text = Field(
        description="Why the result stays within the task's tolerance, and the conditions that must hold for it."
    )
    performance: Text = Field(description="What it costs and what it saves (FLOPs, bytes, launches) at the registered shapes.")
    dataflow: Text = Field(description="What it implies for the data: what is stored, in which precision, for how long.")


class ShapeParallelism(_Part):
    """How much parallel work a stage has at one registered workload."""

    workload: Text = Field(description="A registered workload's name (the task's [[workloads]]).")
    grid: Text = Field(description="The launch grid and what one program computes, e.g. 'B x 136 triangle tiles of 128x128'.")
    programs: int | None = Field(default=None, ge=1, description="Programs per launch, when known.")


class L2Stage(_Part):
    """One stage of the dataflow (usually one kernel or one fused phase)."""

    id: L2Id
    title: Text
    computes: Text = Field(description="What the stage computes, from which inputs.")
    implements: list[L1Id] = Field(min_length=1, description="The L1 entries this stage realises.")
    placement: Text = Field(description="Where its operands and results live (HBM, L2, shared memory, registers).")
    layout: Text = Field(description="Memory layout, tile shapes and precision of what it reads and writes.")
    ownership: Text = Field(description="Which program owns which output tile; who may write what.")
    lifetimes: Text = Field(description="When each buffer it writes is created, last read and freed or reused.")
    reuse: Text = Field(description="What is reused (buffers across steps, tiles from cache) and why it is safe.")
    parallelism: list[ShapeParallelism] = Field(min_length=1, description="Its parallelism at the registered shapes.")


class L2Edge(_Part):
    """Data passed from one stage to another, and how the order is enforced."""

    source: L2Id
    target: L2Id
    data: Text = Field(description="What flows: buffer, shape, dtype.")
    ordering: Text = Field(description="How the target is kept from reading before the source finished (launch order, ...).")


class L2Dataflow(_Part):
    stages: list[L2Stage] = Field(min_length=1)
    edges: list[L2Edge] = []
    adoption_checks: list[Text] = Field(
        min_length=1, description="What must be verified before adopting this dataflow (correctness and speed checks)."
    )


class L3Mechanism(_Part):
    """One low-level mechanism and the design items it serves."""

    id: L3Id
    title: Text
    mechanism: Text = Field(description="What is done in the kernels, concretely.")
    serves: list[ItemRef] = Field(min_length=1, description="The L1 entries and L2 stages this mechanism implements.")
    pitfalls: list[Text] = Field(min_length=1, description="What goes wrong when done carelessly.")
    measure: list[Text] = Field(min_length=1, description="What must be measured to know it pays off.")


class Design(_Part):
    """A complete design proposal: algorithm (L1), dataflow (L2), mechanisms (L3)."""

    summary: Text = Field(description="The design in a few sentences.")
    l1: list[L1Entry] = Field(min_length=1)
    l2: L2Dataflow
    l3: list[L3Mechanism] = Field(min_length=1)

    @model_validator(mode="after")
    def _references(self, info: ValidationInfo) -> Design:
        problems: list[str] = []
        ids: list[str] = [e.id for e in self.l1] + [s.id for s in self.l2.stages] + [m.id for m in self.l3]
        seen: set[str] = set()
        for item in ids:
            if item in seen:
                problems.append(f"id {item!r} is used twice")
            seen.add(item)
        l1_ids = {e.id for e in self.l1}
        stage_ids = {s.id for s in self.l2.stages}
        for stage in self.l2.stages:
            problems += [
                f"{stage.id}.implements names {ref!r}, which is no L1 entry" for ref in stage.implements if ref not in l1_ids
            ]
        for n, edge in enumerate(self.l2.edges):
            problems += [
                f"l2.edges[{n}].{end} names {ref!r}, which is no L2 stage"
                for end, ref in (("source", edge.source), ("target", edge.target))
                if ref not in stage_ids
            ]
        for mechanism in self.l3:
            problems += [
                f"{mechanism.id}.serves names {ref!r}, which is no L1 entry or L2 stage"
                for ref in mechanism.serves
                if ref not in l1_ids | stage_ids
            ]
        workloads = (info.context or {}).get("workloads") if isinstance(info.context, dict) else None
        if workloads:
            known = list(workloads)
            for stage in self.l2.stages:
                problems += [
                    f"{stage.id}.parallelism names workload {p.workload!r}; the registered workloads are {', '.join(known)}"
                    for p in stage.parallelism
                    if p.workload not in known
                ]
                missing = [w for w in known if w not in {p.workload for p in stage.parallelism}]
                if missing:
                    problems.append(f"{stage.id}.parallelism leaves out the registered workload(s) {', '.join(missing)}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def validate_design(data: Any, workloads: list[str] | None = None) -> tuple[Design | None, list[str]]:
    """The design, or None and one line per problem (location: message) for the model to fix."""
    try:
        return Design.model_validate(data, context={"workloads": workloads or []}), []
    except ValidationError as exc:
        lines = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(p) for p in error["loc"]) or "design"
            message = str(error["msg"]).removeprefix("Value error, ")
            lines.append(f"{where}: {message}")
        return None, lines


def design_schema() -> dict[str, Any]:
    """The JSON schema of `Design` (what model_design.schema.json holds)."""
    schema = Design.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "model_design.schema.json", **schema}


def schema_text() -> str:
    return json.dumps(design_schema(), indent=2, ensure_ascii=False) + "\n"


def shipped_schema() -> dict[str, Any]:
    """The shipped schema file, as the model is given it."""
    data: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return data


def tool_parameters() -> dict[str, Any]:
    """submit_design's arguments: {"design": Design}, the schema's $defs moved to the top so that "#/$defs/..."
    references resolve from the parameters' root."""
    schema = {k: v for k, v in shipped_schema().items() if k not in ("$schema", "$id")}
    defs = schema.pop("$defs", {})
    return {"type": "object", "properties": {"design": schema}, "required": ["design"], "$defs": defs}


if __name__ == "__main__":  # regenerate the shipped schema
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
