"""Reading task and guidance files from disk into validated models, with errors a user can act on."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from workbench.catalog.errors import CatalogError
from workbench.catalog.guidance import Guidance, Rubric
from workbench.catalog.task import Task, TaskSpec

TASK_FILES = ("task.toml", "reference.py", "inputs.py", "template.py")
Model = TypeVar("Model", bound=BaseModel)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise CatalogError(path, "file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(path, f"not valid TOML: {exc}") from None
    except OSError as exc:
        raise CatalogError(path, f"cannot read: {exc.strerror}") from None


def _field_name(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif part in ("tensor", "scalar") and parts:
            continue  # pydantic's discriminator tag, not a field the user wrote
        else:
            parts.append(("." if parts else "") + part)
    return "".join(parts) or "(top level)"


def _validate(model: type[Model], data: dict[str, Any], path: Path) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] not in ("missing", "value_error", "model_type") and "input" in error:
                message += f" (got {error['input']!r})"
            problems.append((_field_name(error["loc"]), message))
        first_field, first_message = problems[0]
        more = "".join(f"\n  also {field}: {message}" for field, message in problems[1:])
        raise CatalogError(path, first_message + more, field=first_field) from None


def load_task(task_dir: Path) -> Task:
    """Load and validate one task folder."""
    path = task_dir / "task.toml"
    spec = _validate(TaskSpec, _read_toml(path), path)
    if spec.id != task_dir.name:
        raise CatalogError(path, f"expected the folder's name {task_dir.name!r}, got {spec.id!r}", field="id")
    for name in (*TASK_FILES[1:], spec.description):
        if not (task_dir / name).is_file():
            raise CatalogError(task_dir / name, "file not found (every task needs it)")
    _check_template(task_dir / "template.py")
    return Task(spec=spec, dir=task_dir)


def _raises_not_implemented(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.Raise) or statement.exc is None:
        return False
    raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def _check_template(path: Path) -> None:
    """A template is where a session starts, never a candidate: its `run` only raises NotImplementedError
    (after an optional docstring). Sessions rely on it: the runner never evaluates the untouched template."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise CatalogError(path, f"not valid Python (line {exc.lineno}): {exc.msg}") from None
    runs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
    if not runs:
        raise CatalogError(path, "defines no run(...) function")
    body = runs[-1].body
    if ast.get_docstring(runs[-1]) is not None:
        body = body[1:]
    if len(body) != 1 or not _raises_not_implemented(body[0]):
        raise CatalogError(
            path, f"line {runs[-1].lineno}: run(...) must only raise NotImplementedError (a template is never evaluated)"
        )


def load_guidance(guidance_dir: Path) -> Guidance:
    path = guidance_dir / "guidance.toml"
    return _validate(Guidance, _read_toml(path), path)


def load_rubric(guidance_dir: Path, guidance: Guidance) -> Rubric:
    path = guidance_dir / "rubric.toml"
    rubric = _validate(Rubric, _read_toml(path), path)
    known = {item.id for item in guidance.items}
    for index, criterion in enumerate(rubric.criteria):
        for ref in criterion.guidance:
            if ref not in known:
                raise CatalogError(path, f"names unknown guidance item {ref!r}", field=f"criteria[{index}].guidance")
    return rubric
