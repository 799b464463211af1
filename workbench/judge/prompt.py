"""The judge's prompt: a system message and a user template per kind, kept as files of the package
(`workbench/judge/prompts/`), filled here. Their hash (with the reply schema's) is recorded with every verdict.

Templates hold `{name}` fields; `fill` replaces exactly the known names (so that braces elsewhere, such as
the JSON schema put into the system message, are left alone) and refuses a template naming an unknown one.

    impl:   system.md + impl_user.md    task, requirements, guidance L1-L3, rubric, expert.py, candidate listing
    design: system.md + design_user.md  task, requirements, guidance L1-L3, rubric (no expert evidence), design listing

Runtime measurements never enter a prompt (the revision's report is not read here at all).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from workbench.catalog.guidance import LEVEL_NAMES, LEVELS, Guidance, Level, Rubric, render
from workbench.catalog.task import Task
from workbench.errors import UsageError
from workbench.judge.shown import Hidden, shown_candidate
from workbench.judge.verdict import VerdictKind

SYSTEM_TEMPLATE = "prompts/system.md"
USER_TEMPLATES: dict[VerdictKind, str] = {"impl": "prompts/impl_user.md", "design": "prompts/design_user.md"}
SCHEMA_FILE = "prompts/reply.schema.json"
DESIGN_FILE = "model_design.json"
EXPERT_FILE = "expert.py"

_FIELD = re.compile(r"\{([a-z_]+)\}")
FIELDS: dict[str, frozenset[str]] = {
    SYSTEM_TEMPLATE: frozenset({"reply_schema"}),
    USER_TEMPLATES["impl"]: frozenset(
        {
            "task_id",
            "task_title",
            "task_description",
            "requirements",
            "guidance",
            "rubric",
            "expert_file",
            "expert_source",
            "candidate_file",
            "revision",
            "candidate_listing",
            "launch_record",
        }
    ),
    USER_TEMPLATES["design"]: frozenset(
        {
            "task_id",
            "task_title",
            "task_description",
            "requirements",
            "guidance",
            "rubric",
            "candidate_file",
            "revision",
            "candidate_listing",
        }
    ),
}


def package_text(name: str) -> str:
    """A data file of the package (`prompts/...`), as text."""
    return resources.files("workbench.judge").joinpath(name).read_text(encoding="utf-8")


def reply_schema(criteria: Mapping[Level, Sequence[str]] | None = None) -> dict[str, Any]:
    """The JSON schema of the reply (strict-mode compatible: every property required, no extra ones). With
    `criteria` (the rubric's ids per level), each level gets its own definition whose `realized`, `partial`,
    `missing` and citation `criterion` are an enum of that level's ids, so structured output cannot name a
    criterion loosely (and a reply that does is refused by the verification all the same)."""
    data: dict[str, Any] = json.loads(package_text(SCHEMA_FILE))
    if criteria is None:
        return data
    generic_level, generic_citation = data["$defs"].pop("level"), data["$defs"].pop("citation")
    for level in LEVELS:
        ids = {"type": "string", "enum": list(criteria[level])}
        citation = copy.deepcopy(generic_citation)
        citation["properties"]["criterion"] = ids | {"description": f"The id of the {level} criterion the passage concerns"}
        definition = copy.deepcopy(generic_level)
        for group in ("realized", "partial", "missing"):
            definition["properties"][group]["items"] = ids
        definition["properties"]["citations"]["items"] = {"$ref": f"#/$defs/citation_{level}"}
        data["$defs"][f"level_{level}"], data["$defs"][f"citation_{level}"] = definition, citation
        data["properties"]["levels"]["properties"][level] = {"$ref": f"#/$defs/level_{level}"}
    return data


def fill(template: str, values: dict[str, str], name: str = "template") -> str:
    """`template` with each `{field}` replaced by its value; UsageError for a field not in `values`."""

    def replace(match: re.Match[str]) -> str:
        field = match.group(1)
        if field not in values:
            raise UsageError(f"the judge's {name} names an unknown field {{{field}}}")
        return values[field]

    return _FIELD.sub(replace, template)


def prompt_hash(kind: VerdictKind) -> str:
    """sha256 of the templates and the schema a verdict of `kind` is asked with."""
    digest = hashlib.sha256()
    for name in (SYSTEM_TEMPLATE, USER_TEMPLATES[kind], SCHEMA_FILE):
        digest.update(name.encode() + b"\0" + package_text(name).encode() + b"\0")
    return digest.hexdigest()


def numbered(text: str) -> str:
    """`text` as `NUMBER | line`, numbers right-aligned (what the judge cites by)."""
    lines = text.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{n:>{width}} | {line}".rstrip() for n, line in enumerate(lines, start=1))


def canonical_design(raw: str | bytes) -> str:
    """The canonical text of a model_design.json: sorted keys, two-space indent, UTF-8, one final newline.
    UsageError when it is not JSON."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"{DESIGN_FILE} is not valid JSON: {exc}") from None
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def render_rubric(rubric: Rubric, *, with_evidence: bool) -> str:
    """The rubric as the judge reads it: the notes, then per level each criterion with its id, property, cost
    removed, what counts as partial or missing and (for implementations) where the expert realises it."""
    lines: list[str] = []
    if rubric.notes.strip():
        lines += ["Notes:", rubric.notes.strip(), ""]
    for level in LEVELS:
        criteria = rubric.for_level(level)
        lines += [f"### {level}: {LEVEL_NAMES[level]} ({len(criteria)} criteria)", ""]
        for criterion in criteria:
            lines.append(f"- {criterion.id} (guidance: {', '.join(criterion.guidance)})")
            lines.append(f"  Property: {criterion.property.strip()}")
            lines.append(f"  Cost removed: {criterion.cost_removed.strip()}")
            lines.append(f"  Partial or missing: {criterion.partial.strip()}")
            if with_evidence:
                lines.append(f"  Expert evidence: {criterion.expert_evidence.strip()}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


@dataclass(frozen=True)
class JudgeInput:
    """Everything one verdict is asked with, and what its citations are checked against."""

    kind: VerdictKind
    rev: int
    sha: str
    file: str  # the cited file, workspace-relative
    text: str  # its text (the solution's source, or the design's canonical text)
    system: str
    user: str
    criteria: dict[Level, list[str]]  # the rubric's criterion ids per level
    prompt_hash: str
    templates: tuple[str, ...]
    hidden: tuple[Hidden, ...] = ()  # spans of code that never ran, not shown (they cannot be cited)

    @property
    def input_hash(self) -> str:
        return hashlib.sha256(self.system.encode() + b"\0" + self.user.encode()).hexdigest()


def build_input(
    kind: VerdictKind,
    task: Task,
    guidance: Guidance,
    rubric: Rubric,
    *,
    rev: int,
    sha: str,
    file: str,
    text: str,
    expert_source: str | None = None,
    launched: dict[str, dict[str, int]] | None = None,
) -> JudgeInput:
    """The filled prompt for judging `text` (the candidate's `file` at revision `rev`). For `impl`,
    `expert_source` is the expert implementation (required) and `launched` the evaluation's launch record
    (per workload, launches of each Triton kernel in one call; None: none stored); a design's prompt has
    neither. An implementation is shown as `shown.shown_candidate` makes it (no claims, neutral names, only
    code that ran)."""
    if kind == "impl" and expert_source is None:
        raise UsageError(f"task {task.id} has no expert implementation ({EXPERT_FILE}) to judge against")
    hidden: tuple[Hidden, ...] = ()
    record = ""
    if kind == "impl":
        shown = shown_candidate(text, launched)
        text, hidden, record = shown.text, tuple(shown.hidden), shown.ran_table
    criteria = {level: [c.id for c in rubric.for_level(level)] for level in LEVELS}
    schema_text = json.dumps(reply_schema(criteria), indent=2)
    system = fill(package_text(SYSTEM_TEMPLATE), {"reply_schema": schema_text}, SYSTEM_TEMPLATE)
    values = {
        "task_id": task.id,
        "task_title": task.spec.title,
        "task_description": task.description_text().strip(),
        "requirements": "\n".join(f"- {r}" for r in task.spec.requirements) or "- (none)",
        "guidance": render(guidance, "L1+L2+L3").strip(),
        "rubric": render_rubric(rubric, with_evidence=kind == "impl").strip(),
        "candidate_file": file,
        "revision": str(rev),
        "candidate_listing": numbered(text),
    }
    if kind == "impl":
        values |= {"expert_file": EXPERT_FILE, "expert_source": (expert_source or "").rstrip("\n"), "launch_record": record}
    user = fill(package_text(USER_TEMPLATES[kind]), values, USER_TEMPLATES[kind])
    return JudgeInput(
        kind=kind,
        rev=rev,
        sha=sha,
        file=file,
        text=text,
        system=system,
        user=user,
        criteria=criteria,
        prompt_hash=prompt_hash(kind),
        templates=(SYSTEM_TEMPLATE, USER_TEMPLATES[kind], SCHEMA_FILE),
        hidden=hidden,
    )
