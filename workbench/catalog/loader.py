"""Reading task and guidance files from disk into validated models, with errors a user can act on."""

from __future__ import annotations

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
    return Task(spec=spec, dir=task_dir)


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
