"""Rich tables describing a catalogue task, shared by `tasks show` and the workbench's tasks screen.

Depends on the catalogue and Rich only (no Textual), so the CLI can import it without the TUI.
"""

from __future__ import annotations

import re

from rich.table import Table

from workbench.catalog import Task
from workbench.catalog.task import ScalarArg, TensorArg, TensorListArg


def shape_text(dims: list[str | int]) -> str:
    """A tensor shape as written in task.toml: "[B, M, N]"."""
    return "[" + ", ".join(str(d) for d in dims) + "]"


def dtype_text(arg: TensorArg | TensorListArg) -> str:
    """A tensor input's dtype, or the dtypes a workload axis picks from: "float32 | bfloat16 (by SB)"."""
    if arg.dtype_by is None:
        return arg.dtype
    return " | ".join(dict.fromkeys(arg.dtype_by.dtypes.values())) + f" (by {arg.dtype_by.axis})"


def signature_table(task: Task, expand: bool = False) -> Table:
    """The task's `run(...)`: one row per input (scalars with their required value, tensors with shape,
    layout and whether they are state updated in place), then one per output (returned or preallocated).
    Five narrow columns, so that it fits the workbench's detail pane as well as a terminal."""
    table = Table(title="run(...) signature", title_justify="left", expand=expand)
    for column in ("", "name", "dtype", "shape", "notes"):
        table.add_column(column, overflow="fold")
    signature = task.spec.signature
    for arg in signature.inputs:
        if isinstance(arg, ScalarArg):
            table.add_row("in", arg.name, arg.dtype, "scalar", f"must be {arg.value}" if arg.value is not None else "")
        elif isinstance(arg, TensorListArg):
            notes = f"list of {arg.count} tensors, {arg.numel} elements in all"
            notes += "; state, updated in place" if arg.state else ""
            table.add_row("in", arg.name, dtype_text(arg), "list", notes)
        else:
            table.add_row(
                "in",
                arg.name,
                dtype_text(arg),
                shape_text(arg.shape),
                arg.layout + ("; state, updated in place" if arg.state else ""),
            )
    for out in signature.outputs:
        table.add_row(
            "out",
            out.name,
            out.dtype,
            shape_text(out.shape),
            f"{out.layout}; " + ("returned" if out.mode == "return" else "preallocated, passed in"),
        )
    return table


_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.*?)[\s#]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def split_at_workloads_table(markdown: str) -> tuple[str, str] | None:
    """A task description cut around the table of its "Workloads" section (the table left out), so that
    a fuller table of the workloads can stand in its place; None when the description has no such table."""
    lines = markdown.splitlines(keepends=True)
    in_section = in_fence = False
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        heading = None if in_fence else _HEADING.match(line)
        if heading is not None:
            in_section = heading["title"].strip().lower() == "workloads"
        elif in_section and not in_fence and line.lstrip().startswith("|"):
            end = number
            while end < len(lines) and lines[end].lstrip().startswith("|"):
                end += 1
            return "".join(lines[:number]), "".join(lines[end:])
    return None
