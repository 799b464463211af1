"""What a task declares for its studies, validated: `false_failure.toml` and `sweep.toml` in the task's folder.

Both are data. A design of a false-failure study is a function of the task's reference.py, a solution file's
`run` (expert.py, or a path from the repository root such as tests/solutions/<task>_naive.py), a red-team cheat
appended to a solution file, or an emulation: a function of the task's own `false_failure.py`, called as
`fn(reference, inputs, **with)` (the task's reference module, the call's inputs, the declared keywords). A
sweep's candidates are the combinations of the values its grids list for the fields of the expert's `Config`.
This module imports no torch: the CLI reads the declarations to check a request before any study runs.
"""

from __future__ import annotations

import tomllib
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from workbench.catalog import expressions
from workbench.catalog.task import Task
from workbench.errors import UsageError

FALSE_FAILURE_FILE = "false_failure.toml"
EMULATIONS_FILE = "false_failure.py"
SWEEP_FILE = "sweep.toml"
Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")]
Value = int | float | bool | str
Spec = TypeVar("Spec", bound=BaseModel)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _expression(text: str) -> str:
    try:
        expressions.parse(text, allow_compare=True)
    except expressions.ExpressionError as exc:
        raise ValueError(str(exc)) from None
    return text


class Design(_Strict):
    """One design whose error the study measures on every call: exactly one of `reference`, `solution` and
    `emulation` says what runs."""

    name: Name
    honest: bool  # an honest design must pass every call; a wrong one should fail every counted call
    reference: str | None = None  # a function of the task's reference.py, called as run(...) is
    solution: str | None = None  # a file whose run(...) is called: in the task's folder, else from the repository root
    cheat: str | None = None  # a red-team cheat (repository path) appended to `solution`, whose run becomes honest_run
    emulation: str | None = None  # a function of the task's false_failure.py: fn(reference, inputs, **with)
    with_: dict[str, Value] = Field(default={}, alias="with")
    every: int = Field(default=1, ge=1)  # runs on one fresh call in `every` (the interpreter is slow)
    counted_when: str | None = None  # an expression over the call's scalar inputs and axes: other calls are not counted
    note: str = ""

    @model_validator(mode="after")
    def _one_source(self) -> Design:
        sources = [s for s in (self.reference, self.solution, self.emulation) if s is not None]
        if len(sources) != 1:
            raise ValueError(f"design {self.name!r} needs exactly one of reference, solution and emulation")
        if self.cheat is not None and self.solution is None:
            raise ValueError(f"design {self.name!r}: a cheat is appended to a solution; name the solution")
        if self.with_ and self.emulation is None:
            raise ValueError(f"design {self.name!r}: `with` gives keywords to an emulation only")
        if self.counted_when is not None:
            _expression(self.counted_when)
        return self


class Shape(_Strict):
    """A shape beyond the task's workloads (a registered shape scaled down, say), for the designs a CPU can run
    there: `axes`, or a registered workload's axes with some replaced (`workload` plus `axes`)."""

    name: Name
    workload: str | None = None
    axes: dict[str, int] = {}
    designs: list[str] = Field(min_length=1)
    calls: int = Field(default=10, ge=1)  # fresh calls at most (never more than --calls)
    scaled_every: int | None = Field(default=None, ge=0)  # default: the study's
    rule: Literal["registered", "smoke"] = "registered"  # which of the task's tolerances applies
    reference: str | None = None  # an emulation standing in for the reference where a rule bounds by its error
    views: str | None = None  # an emulation `fn(reference, outputs, inputs)` replacing the task's views here
    note: str = ""

    @model_validator(mode="after")
    def _some_axes(self) -> Shape:
        if self.workload is None and not self.axes:
            raise ValueError(f"shape {self.name!r} needs axes or a workload")
        return self


class FalseFailureSpec(_Strict):
    """tasks/<task>/false_failure.toml."""

    about: str = Field(min_length=1)  # what the study shows, in a sentence or two (printed as the report's title)
    calls: int = Field(default=100, ge=1)  # fresh calls per workload when --calls is not given
    scaled_every: int = Field(default=10, ge=0)  # a call on scaled inputs after every n-th fresh one (0: none)
    design: list[Design] = Field(min_length=2)
    shape: list[Shape] = []

    @model_validator(mode="after")
    def _consistent(self) -> FalseFailureSpec:
        names = [d.name for d in self.design]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"designs named twice: {twice}")
        if not any(d.honest for d in self.design) or all(d.honest for d in self.design):
            raise ValueError("a study needs at least one honest and one wrong design")
        for shape in self.shape:
            unknown = sorted(set(shape.designs) - set(names))
            if unknown:
                raise ValueError(f"shape {shape.name!r} names unknown designs {unknown}")
        return self

    def designs_named(self, names: list[str] | None) -> list[Design]:
        return [d for d in self.design if names is None or d.name in names]


class Grid(_Strict):
    """Candidates: every combination of `fields`' values, each with every entry of `together` (fields that go
    together), less those matching an entry of `skip` or failing a `where` expression (over the workload's axes
    and the candidate's fields); fields not named keep the current configuration's values."""

    workloads: list[str] = []  # empty: every registered workload
    fields: dict[str, list[Value]] = {}
    together: list[dict[str, Value]] = []
    skip: list[dict[str, Value]] = []
    where: list[str] = []

    @model_validator(mode="after")
    def _parses(self) -> Grid:
        for text in self.where:
            _expression(text)
        if not self.fields and not self.together:
            raise ValueError("a grid needs fields or together")
        return self


class SweepSpec(_Strict):
    """tasks/<task>/sweep.toml: the expert's configurations to time."""

    about: str = Field(min_length=1)
    config: str = "Config"  # the expert's configuration type, built by keyword from the fields
    chooser: str = "config_for"  # the expert's function that picks a call's configuration: the sweep replaces it
    seconds: float = Field(default=60.0, gt=0)  # sweeping time per workload at most
    grid: list[Grid] = Field(min_length=1)


def _declared(task: Task, name: str, what: str, model: type[Spec]) -> Spec:
    """The task's file `name` validated as `model`; UsageError when the task has none or it is invalid."""
    path = task.file(name)
    if not path.is_file():
        raise UsageError(f"task {task.id} declares no {what} ({path} does not exist)")
    try:
        return model.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UsageError(f"{path}: {where + ': ' if where else ''}{first['msg']}") from None


def false_failures(task: Task) -> FalseFailureSpec:
    """The task's false-failure study."""
    return _declared(task, FALSE_FAILURE_FILE, "false-failure study", FalseFailureSpec)


def sweep(task: Task) -> SweepSpec:
    """The expert's sweep."""
    return _declared(task, SWEEP_FILE, "sweep", SweepSpec)
