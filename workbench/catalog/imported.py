"""Tasks imported from a peer's problem set: the record of where one came from (`import.toml` in its folder).

An imported task ships no expert solution, guidance or rubric: the catalogue, the workbench and reports show
it as "imported, no guidance", and only the unguided configuration (`none`) is offered for it, whatever the
guidance folder holds under its id.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.catalog.errors import CatalogError
from workbench.catalog.task import Task

RECORD_FILE = "import.toml"
IMPORTED_LABEL = "imported, no guidance"
PACK_LABELS = {"kernelbench": "KernelBench", "gpumode": "GPU MODE"}


class ImportRecord(BaseModel):
    """Where an imported task came from: the pack, the problem's path in the peer's checkout, its commit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pack: Literal["kernelbench", "gpumode"]
    source: str = Field(min_length=1)  # the problem's path relative to the checkout's root
    problem: str = Field(min_length=1)  # as the importer's summary names it
    commit: str | None = None
    level: int | None = None  # KernelBench's level
    precision: Literal["fp32", "fp16", "bf16"] | None = None  # KernelBench's precision the task was made in
    # each input widened beyond the peer's distribution: its level (wide, signed, scaled or peer; inputs.py's DOMAIN)
    domain: dict[str, Literal["wide", "signed", "scaled", "peer"]] = {}

    def origin(self) -> str:
        """One line for people: "KernelBench level1/19_ReLU.py @ 1a2b3c4d5e6f"."""
        at = f" @ {self.commit[:12]}" if self.commit else ""
        return f"{PACK_LABELS[self.pack]} {self.problem}{at}"


def record_toml(record: ImportRecord) -> str:
    lines = ["# Where this task came from (d2k-workbench import); the importer writes it, nothing reads it but the catalogue"]
    for key, value in record.model_dump().items():
        if isinstance(value, dict):
            lines.append(f"{key} = {{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + " }")
        elif value is not None:
            lines.append(f"{key} = {json.dumps(value) if isinstance(value, str) else value}")
    return "\n".join(lines) + "\n"


def load_record(task_dir: Path) -> ImportRecord | None:
    """The folder's import record, None for a task written here; CatalogError for a record that is malformed."""
    path = task_dir / RECORD_FILE
    if not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        return ImportRecord.model_validate(data)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(path, f"not valid TOML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise CatalogError(path, first["msg"], field=".".join(str(p) for p in first["loc"])) from None


def import_record(task: Task) -> ImportRecord | None:
    """The task's import record (None for a task written here)."""
    return load_record(task.dir)
