"""The catalogue: all tasks under one root, with their guidance and rubric under another."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from workbench.catalog.errors import CatalogError
from workbench.catalog.guidance import Guidance, Rubric
from workbench.catalog.imported import load_record
from workbench.catalog.loader import load_guidance, load_rubric, load_task
from workbench.catalog.task import Task

TASK_ID = re.compile(r"[A-Za-z0-9_]{1,100}")  # a folder name under the tasks root, never a path
_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[object, ...]:
    """The sort key of a task id (or any name) in natural order: runs of digits compare as numbers, so
    kb_l1_2_x comes before kb_l1_10_x. Every list of tasks (`tasks`, the workbench) sorts with it."""
    parts = _DIGITS.split(name)  # text, digits, text, ...: the same kind at the same place in every key
    return (*(int(part) if i % 2 else part for i, part in enumerate(parts)), name)


@dataclass(frozen=True)
class CatalogEntry:
    """One task folder as a listing shows it: the task and its guidance, or what is wrong with them."""

    task_id: str
    task: Task | None
    guidance: Guidance | None
    problem: str | None  # the CatalogError's message when the task or its guidance cannot be used


@dataclass(frozen=True)
class Catalog:
    tasks_dir: Path
    guidance_dir: Path

    def task_ids(self) -> list[str]:
        if not self.tasks_dir.is_dir():
            raise CatalogError(self.tasks_dir, "tasks folder not found")
        return sorted((p.name for p in self.tasks_dir.iterdir() if (p / "task.toml").is_file()), key=natural_key)

    def task(self, task_id: str) -> Task:
        if not TASK_ID.fullmatch(task_id):
            raise CatalogError(self.tasks_dir, f"{task_id!r} is not a task id (letters, digits and _ only)")
        task_dir = self.tasks_dir / task_id
        if not (task_dir / "task.toml").is_file():
            known = ", ".join(self.task_ids()) or "none"
            raise CatalogError(task_dir, f"no task {task_id!r} here (known tasks: {known})")
        return load_task(task_dir).model_copy(update={"guidance_dir": self.guidance_dir})

    def tasks(self) -> list[Task]:
        """Every task; the first bad one raises CatalogError (a listing uses `entries()` instead)."""
        return [self.task(task_id) for task_id in self.task_ids()]

    def entries(self) -> list[CatalogEntry]:
        """Every task folder, the good ones with their guidance and each bad one with its problem: one
        malformed task never hides the others."""
        entries = []
        for task_id in self.task_ids():
            try:
                task = self.task(task_id)
            except CatalogError as exc:
                entries.append(CatalogEntry(task_id, None, None, exc.message))
                continue
            try:
                entries.append(CatalogEntry(task_id, task, self.guidance(task_id), None))
            except CatalogError as exc:
                entries.append(CatalogEntry(task_id, task, None, exc.message))
        return entries

    def guidance(self, task_id: str) -> Guidance | None:
        """The task's guidance, or None when the task ships none."""
        if not TASK_ID.fullmatch(task_id):
            raise CatalogError(self.guidance_dir, f"{task_id!r} is not a task id (letters, digits and _ only)")
        folder = self.guidance_dir / task_id
        if not (folder / "guidance.toml").is_file() or load_record(self.tasks_dir / task_id) is not None:
            return None  # an imported task never takes guidance, whatever the guidance folder holds under its id
        guidance = load_guidance(folder)
        if guidance.task != task_id:
            raise CatalogError(folder / "guidance.toml", f"expected {task_id!r}, got {guidance.task!r}", "task")
        return guidance

    def rubric(self, task_id: str) -> Rubric | None:
        if not TASK_ID.fullmatch(task_id):
            raise CatalogError(self.guidance_dir, f"{task_id!r} is not a task id (letters, digits and _ only)")
        guidance = self.guidance(task_id)
        folder = self.guidance_dir / task_id
        if guidance is None or not (folder / "rubric.toml").is_file():
            return None
        return load_rubric(folder, guidance)
