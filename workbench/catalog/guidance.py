"""Expert guidance (L1/L2/L3 items with dependencies) and the judge rubric, and the text an agent gets."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.errors import UsageError

Level = Literal["L1", "L2", "L3"]
LEVELS: tuple[Level, ...] = ("L1", "L2", "L3")
LEVEL_NAMES: dict[Level, str] = {
    "L1": "Algorithmic insights",
    "L2": "Dataflow design",
    "L3": "Low-level optimisation tricks",
}
GuidanceConfig = Literal["none", "L1", "L1+L2", "L1+L2+L3"]
CONFIGS: tuple[GuidanceConfig, ...] = ("none", "L1", "L1+L2", "L1+L2+L3")
ItemId = Annotated[str, Field(pattern=r"^L[123]\.[A-Za-z0-9_.-]+$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GuidanceItem(_Strict):
    id: ItemId
    level: Level
    title: str = Field(min_length=1)
    text: str = Field(min_length=1)
    depends_on: list[str] = []

    @model_validator(mode="after")
    def _prefix_matches_level(self) -> GuidanceItem:
        if not self.id.startswith(self.level + "."):
            raise ValueError(f"id {self.id!r} must start with its level {self.level!r}")
        return self


class Guidance(_Strict):
    """All guidance items of one task; dependencies must name existing items and form no cycle."""

    task: str
    items: list[GuidanceItem] = Field(min_length=1)

    @model_validator(mode="after")
    def _dependencies(self) -> Guidance:
        by_id: dict[str, GuidanceItem] = {}
        for item in self.items:
            if item.id in by_id:
                raise ValueError(f"item id {item.id!r} is used twice")
            by_id[item.id] = item
        for item in self.items:
            for dep in item.depends_on:
                if dep not in by_id:
                    raise ValueError(f"item {item.id!r} depends on unknown item {dep!r}")
        cycle = _find_cycle({item.id: item.depends_on for item in self.items})
        if cycle:
            raise ValueError("dependency cycle: " + " -> ".join(cycle))
        return self

    def items_for(self, config: GuidanceConfig) -> list[GuidanceItem]:
        levels = levels_of(config)
        return [item for item in self.items if item.level in levels]


def _find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """Return one cycle as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in graph:
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def levels_of(config: GuidanceConfig) -> tuple[Level, ...]:
    return () if config == "none" else tuple(level for level in LEVELS if level in config.split("+"))


def parse_config(text: str) -> GuidanceConfig:
    """Accept none, L1, L1+L2, L1+L2+L3 (case-insensitive); anything else is a UsageError."""
    normalised = text.strip().upper().replace(" ", "")
    for config in CONFIGS:
        if normalised == config.upper():
            return config
    raise UsageError(f"unknown guidance configuration {text!r}; expected one of: {', '.join(CONFIGS)}")


def render(guidance: Guidance | None, config: GuidanceConfig) -> str:
    """Exactly the guidance text an agent receives for a configuration ('' for none)."""
    items = guidance.items_for(config) if guidance else []
    if not items:
        return ""
    assert guidance is not None
    lines = [f"# Expert design guidance ({config})", ""]
    for level in levels_of(config):
        lines += [f"## {level}: {LEVEL_NAMES[level]}", ""]
        for item in (i for i in items if i.level == level):
            lines.append(f"### {item.id}: {item.title}")
            if item.depends_on:
                lines.append(f"Builds on: {', '.join(item.depends_on)}")
            lines += ["", item.text.strip(), ""]
    return "\n".join(lines).rstrip() + "\n"


class RubricCriterion(_Strict):
    id: str = Field(min_length=1)
    level: Level
    guidance: list[str] = Field(min_length=1)
    property: str = Field(min_length=1)
    cost_removed: str = Field(min_length=1)
    partial: str = Field(min_length=1)
    expert_evidence: str = Field(min_length=1)


class Rubric(_Strict):
    task: str
    notes: str = ""
    criteria: list[RubricCriterion] = Field(min_length=1)

    def for_level(self, level: Level) -> list[RubricCriterion]:
        return [c for c in self.criteria if c.level == level]
