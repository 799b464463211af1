"""Where the expert realises each rubric criterion: the functions its `expert_evidence` names, located in the
task's expert implementation.

`expert_evidence` is prose that names the expert's functions in backticks ("`_segment` in .../expert.py: the
step loop folds ... (`square(R, R, Z, ...)`) ... the final `_launch_apply`"). Every backticked span whose
leading identifier is defined in the expert file (a function or class at any depth, decorators included, or
a module-level assignment such as `_CONFIGS`) becomes one `EvidenceSpan`, in the order the text names them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from workbench.catalog.guidance import Rubric

_BACKTICKED = re.compile(r"`([^`]+)`")
_LEADING_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class EvidenceSpan:
    """One definition of the expert file: its name and its inclusive 1-based lines."""

    name: str
    start_line: int
    end_line: int


def definitions(source: str) -> dict[str, EvidenceSpan]:
    """Every function and class (at any depth, the first of a name wins) and module-level assignment of `source`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[str, EvidenceSpan] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.end_lineno is not None:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found.setdefault(node.name, EvidenceSpan(node.name, start, node.end_lineno))
    for statement in tree.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = list(statement.targets)
        elif isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        for target in targets:
            if isinstance(target, ast.Name) and statement.end_lineno is not None:
                found.setdefault(target.id, EvidenceSpan(target.id, statement.lineno, statement.end_lineno))
    return found


def evidence_names(text: str) -> list[str]:
    """The leading identifiers of the backticked spans of `text`, in order, each once."""
    names: list[str] = []
    for span in _BACKTICKED.findall(text):
        match = _LEADING_NAME.match(span)
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return names


def criterion_evidence(rubric: Rubric, expert_source: str) -> dict[str, list[EvidenceSpan]]:
    """Per criterion id, the expert's definitions its `expert_evidence` names (empty when it names none)."""
    defined = definitions(expert_source)
    return {
        criterion.id: [defined[name] for name in evidence_names(criterion.expert_evidence) if name in defined]
        for criterion in rubric.criteria
    }
