"""The task schema: what `tasks/<id>/task.toml` holds, validated."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workbench.catalog import expressions
from workbench.errors import UsageError

TensorDtype = Literal[
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
]
ScalarDtype = Literal["int", "float", "bool"]
FlopDtype = Literal["float16", "bfloat16", "float32", "tf32", "float8", "float64"]
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_shape(shape: list[str | int]) -> list[str | int]:
    for dim in shape:
        if isinstance(dim, int):
            if dim <= 0:
                raise ValueError(f"a fixed dimension must be positive, got {dim}")
        else:
            try:
                expressions.parse(dim)
            except expressions.ExpressionError as exc:
                raise ValueError(f"bad shape expression: {exc}") from None
    return shape


class DtypeByAxis(_Strict):
    """A dtype that a workload axis picks: `axis` names the axis and `dtypes` maps each value it takes to the
    dtype (an optimiser's states in float32 at SB = 4 and bfloat16 at SB = 2, say, where the same axis sizes the
    bytes in the roofline). The argument's own `dtype` must be one of them; every workload's value of the axis
    must be a key."""

    axis: Identifier
    dtypes: dict[int, TensorDtype] = Field(min_length=2)


def _dtype_by_holds(name: str, dtype: str, dtype_by: DtypeByAxis | None) -> None:
    if dtype_by is not None and dtype not in dtype_by.dtypes.values():
        raise ValueError(f"{name}: dtype {dtype} is not one of dtype_by's dtypes {sorted(set(dtype_by.dtypes.values()))}")


class TensorArg(_Strict):
    """A tensor argument: dtype, shape over named axes, layout; `state` marks in-place updates; `dtype_by` lets
    a workload axis pick the dtype."""

    kind: Literal["tensor"] = "tensor"
    name: Identifier
    dtype: TensorDtype
    dtype_by: DtypeByAxis | None = None
    shape: list[str | int]
    layout: Literal["contiguous", "any"] = "contiguous"
    state: bool = False
    description: str = ""

    @field_validator("shape")
    @classmethod
    def _shape_parses(cls, value: list[str | int]) -> list[str | int]:
        return _check_shape(value)

    @model_validator(mode="after")
    def _dtype_listed(self) -> TensorArg:
        _dtype_by_holds(self.name, self.dtype, self.dtype_by)
        return self

    def axes(self) -> set[str]:
        found = set().union(*(expressions.names(d) for d in self.shape if isinstance(d, str)))
        return found | ({self.dtype_by.axis} if self.dtype_by else set())


class ScalarArg(_Strict):
    """A scalar argument; `value` pins the only value the task accepts; `axis` names the workload axis
    whose value it carries (a window length, say), which the harness checks every call's inputs give."""

    kind: Literal["scalar"]
    name: Identifier
    dtype: ScalarDtype
    value: int | float | bool | None = None
    axis: Identifier | None = None
    description: str = ""

    @model_validator(mode="after")
    def _pinned_or_axis(self) -> ScalarArg:
        if self.value is not None and self.axis is not None:
            raise ValueError(f"scalar {self.name}: give a pinned value or an axis, not both")
        if self.axis is not None and self.dtype != "int":
            raise ValueError(f"scalar {self.name}: an axis is an integer; dtype must be int")
        return self


class TensorListArg(_Strict):
    """A list of tensors of one dtype, each its own allocation (an optimiser's parameters, say).

    `count` (an axis expression) is the list's length and `numel` the elements over the whole list; each
    element's shape is data the task's inputs.py makes from the workload's axes (`shaped_by` names any axis it
    uses besides those two). `state` marks lists the call updates in place. The harness checks every list it
    makes against `count` and `numel`, moves each element as a separate tensor, and gives `run(...)` a Python
    list; elements are compared one by one under the list's tolerance rule.
    """

    kind: Literal["tensor_list"]
    name: Identifier
    dtype: TensorDtype
    dtype_by: DtypeByAxis | None = None
    count: str
    numel: str
    shaped_by: list[Identifier] = []
    layout: Literal["contiguous"] = "contiguous"
    state: bool = False
    description: str = ""

    @field_validator("count", "numel")
    @classmethod
    def _formula(cls, value: str) -> str:
        try:
            expressions.parse(value)
        except expressions.ExpressionError as exc:
            raise ValueError(f"bad list size expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _dtype_listed(self) -> TensorListArg:
        _dtype_by_holds(self.name, self.dtype, self.dtype_by)
        return self

    def axes(self) -> set[str]:
        found = expressions.names(self.count) | expressions.names(self.numel) | set(self.shaped_by)
        return found | ({self.dtype_by.axis} if self.dtype_by else set())


Argument = Annotated[TensorArg | TensorListArg | ScalarArg, Field(discriminator="kind")]
TensorLike = (TensorArg, TensorListArg)  # the inputs that hold tensors


class OutputSpec(_Strict):
    """An output: returned by run(...) or preallocated by the harness and passed in."""

    name: Identifier
    dtype: TensorDtype
    shape: list[str | int]
    layout: Literal["contiguous", "any"] = "contiguous"
    mode: Literal["return", "preallocated"] = "return"
    description: str = ""

    @field_validator("shape")
    @classmethod
    def _shape_parses(cls, value: list[str | int]) -> list[str | int]:
        return _check_shape(value)

    def axes(self) -> set[str]:
        return set().union(*(expressions.names(d) for d in self.shape if isinstance(d, str)))


class Signature(_Strict):
    """The `run(...)` entry point."""

    inputs: list[Argument] = Field(min_length=1)
    outputs: list[OutputSpec] = []  # none only where state inputs carry the whole result (an optimiser step)
    constraints: list[str] = []

    @field_validator("constraints")
    @classmethod
    def _constraints_parse(cls, value: list[str]) -> list[str]:
        for text in value:
            try:
                expressions.parse(text, allow_compare=True)
            except expressions.ExpressionError as exc:
                raise ValueError(f"bad constraint: {exc}") from None
        return value

    @model_validator(mode="after")
    def _some_result(self) -> Signature:
        if not self.outputs and not any(isinstance(a, TensorLike) and a.state for a in self.inputs):
            raise ValueError("a signature needs an output, or a state input that the call updates in place")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> Signature:
        seen: set[str] = set()
        for arg in [*self.inputs, *self.outputs]:
            if arg.name in seen:
                raise ValueError(f"argument name {arg.name!r} is used twice")
            seen.add(arg.name)
        return self

    def axes(self) -> set[str]:
        found: set[str] = set()
        for arg in [*self.inputs, *self.outputs]:
            if isinstance(arg, (TensorArg, TensorListArg, OutputSpec)):
                found |= arg.axes()
            elif arg.axis is not None:
                found.add(arg.axis)
        return found


class CompareRule(_Strict):
    """How one compared value is held to the oracle's.

    Elementwise: |out - oracle| <= atol + rtol * |oracle|. Per matrix (the last two dims): the relative
    Frobenius error err_i = ||out_i - oracle_i||_F / ||oracle_i||_F must satisfy
    err_i <= max(matrix_rel_fro, reference_error_factor * e_ref_i), where e_ref_i is the task reference's
    own error on the same input (aggregate = "max": every matrix), or the same with the means over the
    call's matrices (aggregate = "mean").
    """

    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)
    matrix_rel_fro: float | None = Field(default=None, gt=0)
    reference_error_factor: float | None = Field(default=None, gt=0)
    aggregate: Literal["max", "mean"] = "max"
    evidence: str = ""

    @model_validator(mode="after")
    def _some_rule(self) -> CompareRule:
        if self.atol is None and self.rtol is None and self.matrix_rel_fro is None:
            raise ValueError("set atol/rtol (elementwise) and/or matrix_rel_fro (per matrix)")
        if self.reference_error_factor is not None and self.matrix_rel_fro is None:
            raise ValueError("reference_error_factor needs matrix_rel_fro")
        return self


class ToleranceRule(CompareRule):
    """How outputs are compared with the oracle: one default rule, and a rule per compared value.

    The oracle is `reference(...)` or, with oracle = "exact", the high-precision `exact(...)` from
    reference.py. `outputs` holds rules for single outputs or state inputs by name (the default rule
    covers the rest): a float32 reduction can be held far tighter than a bfloat16 matrix beside it.
    `views` names a function of reference.py, `views(outputs, inputs) -> dict[str, Tensor]`, that turns
    the raw outputs into the values compared (a quantised tensor and its scales into the dequantised
    values, say); the checker applies it to the solution's outputs and to the oracle's alike, and a
    ValueError it raises (a negative scale, say) fails the call. Rules in `outputs` then name views.
    """

    oracle: Literal["reference", "exact"] = "reference"
    views: Identifier | None = None
    outputs: dict[str, CompareRule] = {}

    def rule_for(self, name: str) -> CompareRule:
        """The rule for the compared value (output, state input or view) called `name`."""
        return self.outputs.get(name, self)


class Tolerance(ToleranceRule):
    """The rule for registered workloads, and optionally another for the CPU smoke workloads."""

    smoke: ToleranceRule | None = None


class Workload(_Strict):
    """A named set of axis values; `tolerance` replaces the task's rule at this workload only (where an axis
    changes what is compared: states stored in bfloat16 instead of float32, say). `device_memory_gib` declares
    the device memory the workload itself needs (its inputs, its outputs and one run of the reference): a device
    with less is refused before anything starts, and the workload reported `skipped` (never a failure)."""

    name: Identifier
    axes: dict[str, int]
    tolerance: ToleranceRule | None = None
    device_memory_gib: float | None = Field(default=None, gt=0)

    @field_validator("axes")
    @classmethod
    def _positive(cls, value: dict[str, int]) -> dict[str, int]:
        for axis, size in value.items():
            if size <= 0:
                raise ValueError(f"axis {axis} must be positive, got {size}")
        return value


class Checks(_Strict):
    """How many correctness trials the harness runs per workload.

    Each workload gets `fresh_trials` calls on fresh inputs, one call with new values written into the
    previous call's buffers, and (unless input_scale is 0) one with floating inputs scaled by input_scale.
    """

    fresh_trials: int = Field(default=2, ge=1, le=20)
    input_scale: float = Field(default=1000.0, ge=0)
    # true: identical inputs must give bit-identical outputs; the first workload's first trial is run again on
    # the same inputs (made afresh, new buffers) and every output and state input compared bit for bit
    deterministic: bool = False
    evidence: str = ""


class Sampling(_Strict):
    """Outputs that are random draws: checked by their distribution, never against the oracle's values.

    `outputs` names the drawn outputs; `seed` the integer scalar input that seeds the call's randomness
    (the same seed and inputs must give the same draws: set `checks.deterministic`). `intervals` names a
    function of reference.py, `intervals(outputs, inputs) -> Tensor [R, 2]` (float64), that gives for each
    of the call's R independent draws the interval [F(x-), F(x)] of the target distribution's CDF at the
    drawn value x (the task picks the order of the values; a draw the distribution cannot produce has an
    empty interval, and a ValueError says an output is malformed). The checker turns each draw into a
    uniform with its own randomness inside that interval (a randomised probability integral transform:
    exactly Uniform(0, 1), independent across draws, for a correct sampler) and pools them per workload
    until it holds `min_draws` (`smoke_min_draws` on the CPU), calling with fresh inputs as needed, each
    such call followed by one on the same inputs with another seed. Three tests then each hold at
    `alpha` / 3: Kolmogorov-Smirnov on the pooled values (the marginal law) and on the circular distances
    between disjoint random pairs of rows of one call (rows independent), and the count of rows that drew
    the same value under two seeds against its Poisson-binomial law (the seed used; harness/checker/draws.py).
    A draw outside the support fails at once.
    """

    outputs: list[Identifier] = Field(min_length=1)
    seed: Identifier
    intervals: Identifier = "draw_intervals"
    min_draws: int = Field(default=4096, ge=64, le=1_000_000)
    smoke_min_draws: int = Field(default=512, ge=64, le=1_000_000)
    alpha: float = Field(default=1e-6, gt=0, le=0.01)
    evidence: str = ""


class Timing(_Strict):
    """How the registered workloads are timed: "auto" (CUDA events, or graph replay for calls shorter
    than timing.GRAPH_THRESHOLD_MS), "events" always, or "graph" always (a call that cannot be captured
    falls back to events, with a note in the report)."""

    mode: Literal["auto", "events", "graph"] = "auto"


class LibraryBaseline(_Strict):
    """The best library call for the job, timed beside the reference as a second baseline (on a GPU).

    `function` names a function of reference.py taking the reference's arguments; `call` says what it runs
    (shown in reports); `same_result` False marks a related call that is not the task's exact computation
    (per-tensor FP8 scales where the task has block scales): its time is a speed target, not a substitute. `cpu`
    False marks a call with CUDA kernels only (flash attention's backward, block-scaled FP8 GEMMs): its result
    is checked on a GPU only (the baseline is only ever timed on a GPU).
    """

    call: str = Field(min_length=1)
    function: Identifier = "library"
    same_result: bool = True
    cpu: bool = True
    note: str = ""


class Roofline(_Strict):
    """Two floors, as formulas over the axes.

    The reference's dataflow: `flops` (what the reference computes) and `reference_bytes` (what its
    eager kernels read and write, intermediates included). The expert's (any honest design's):
    `min_flops` (default `flops`) and `bytes`, the fewest bytes of device memory traffic. The harness
    rejects a latency below the expert's floor; reports give the fraction of each floor reached.
    """

    flops: str
    min_flops: str | None = None
    bytes: str
    reference_bytes: str | None = None
    flop_dtype: FlopDtype = "float16"
    reference_flop_dtype: FlopDtype | None = None  # the reference's arithmetic where it differs (bf16 vs FP8)

    @field_validator("flops", "min_flops", "bytes", "reference_bytes")
    @classmethod
    def _formula(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            expressions.parse(value)
        except expressions.ExpressionError as exc:
            raise ValueError(str(exc)) from None
        return value


class TaskSpec(_Strict):
    """Everything `task.toml` declares about a task."""

    id: Identifier
    title: str
    category: str
    description: str = "description.md"
    signature: Signature
    tolerance: Tolerance
    workloads: list[Workload] = Field(min_length=1)
    smoke_workloads: list[Workload] = Field(min_length=1)
    timing: Timing = Timing()
    checks: Checks = Checks()
    roofline: Roofline
    requirements: list[str] = Field(min_length=1)
    library: LibraryBaseline | None = None  # the second baseline, where a library call does the job
    sampling: Sampling | None = None  # outputs that are random draws, checked by distribution

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        axes = self.signature.axes()
        roofline = self.roofline
        formulas = [roofline.flops, roofline.min_flops or "0", roofline.bytes, roofline.reference_bytes or "0"]
        for text in [*formulas, *self.signature.constraints]:
            unknown = expressions.names(text, allow_compare=True) - axes
            if unknown:
                raise ValueError(f"{text!r} names axes {sorted(unknown)} that no shape uses")
        compared = {o.name for o in self.signature.outputs}
        compared |= {a.name for a in self.signature.inputs if isinstance(a, TensorLike) and a.state}
        rules = [("tolerance", self.tolerance), ("tolerance.smoke", self.tolerance.smoke)]
        rules += [(f"workload {w.name!r}'s tolerance", w.tolerance) for w in [*self.workloads, *self.smoke_workloads]]
        for where, rule in rules:
            if rule is not None and rule.views is None:
                unknown_rules = sorted(set(rule.outputs) - compared)
                if unknown_rules:
                    raise ValueError(
                        f"{where}.outputs names {unknown_rules}, which are neither outputs nor state inputs "
                        f"(compared values: {sorted(compared)})"
                    )
        if self.sampling is not None:
            self._check_sampling(self.sampling)
        names: set[str] = set()
        for group, workloads in (("workloads", self.workloads), ("smoke_workloads", self.smoke_workloads)):
            for workload in workloads:
                if workload.name in names:
                    raise ValueError(f"{group}: workload name {workload.name!r} is used twice")
                names.add(workload.name)
                missing = axes - set(workload.axes)
                extra = set(workload.axes) - axes
                if missing or extra:
                    raise ValueError(
                        f"{group}: workload {workload.name!r} must give exactly the axes "
                        f"{sorted(axes)} (missing {sorted(missing)}, unknown {sorted(extra)})"
                    )
                for constraint in self.signature.constraints:
                    if not expressions.evaluate(constraint, workload.axes, allow_compare=True):
                        raise ValueError(f"{group}: workload {workload.name!r} breaks {constraint!r}")
                for arg in self.signature.inputs:
                    by = arg.dtype_by if isinstance(arg, TensorLike) else None
                    if by is not None and workload.axes[by.axis] not in by.dtypes:
                        raise ValueError(
                            f"{group}: workload {workload.name!r} gives {by.axis} = {workload.axes[by.axis]}, which "
                            f"picks no dtype for {arg.name} (dtype_by lists {sorted(by.dtypes)})"
                        )
        return self

    def _check_sampling(self, sampling: Sampling) -> None:
        outputs = {o.name: o for o in self.signature.outputs}
        unknown = sorted(set(sampling.outputs) - set(outputs))
        if unknown:
            raise ValueError(f"sampling.outputs names {unknown}, which are not outputs of run(...)")
        seed = next((a for a in self.signature.inputs if a.name == sampling.seed), None)
        if not isinstance(seed, ScalarArg) or seed.dtype != "int" or seed.value is not None or seed.axis is not None:
            raise ValueError(f"sampling.seed must name a free integer scalar input, not {sampling.seed!r}")
        if not self.checks.deterministic:
            raise ValueError("a task with drawn outputs sets checks.deterministic: one seed, one set of draws")
        if self.checks.input_scale:
            raise ValueError("a task with drawn outputs sets checks.input_scale = 0 (scaled inputs change the law drawn)")


class Task(BaseModel):
    """A loaded task: its spec and where its files are."""

    model_config = ConfigDict(frozen=True)

    spec: TaskSpec
    dir: Path
    guidance_dir: Path | None = None  # the catalogue's guidance folder (never shown to a solution)

    @property
    def id(self) -> str:
        return self.spec.id

    def file(self, name: str) -> Path:
        return self.dir / name

    def description_text(self) -> str:
        return self.file(self.spec.description).read_text(encoding="utf-8")

    def workload(self, name: str) -> Workload:
        for workload in [*self.spec.workloads, *self.spec.smoke_workloads]:
            if workload.name == name:
                return workload
        known = ", ".join(w.name for w in [*self.spec.workloads, *self.spec.smoke_workloads])
        raise UsageError(f"task {self.id} has no workload {name!r} (known: {known})")

    def tolerance_for(self, workload: Workload) -> ToleranceRule:
        """The workload's own rule where it gives one; else the smoke rule for smoke workloads where the task
        gives one; else the main rule."""
        if workload.tolerance is not None:
            return workload.tolerance
        smoke = self.spec.tolerance.smoke
        if smoke is not None and any(w.name == workload.name for w in self.spec.smoke_workloads):
            return smoke
        return self.spec.tolerance

    def dtype_of(self, arg: TensorArg | TensorListArg, workload: Workload) -> TensorDtype:
        """The input's dtype at `workload`: the one its dtype_by axis picks, else the declared one."""
        by = arg.dtype_by
        return arg.dtype if by is None else by.dtypes[workload.axes[by.axis]]

    def flops(self, workload: Workload) -> float:
        return float(expressions.evaluate(self.spec.roofline.flops, workload.axes))

    def min_flops(self, workload: Workload) -> float:
        """The fewest FLOPs any honest design needs (the floor check uses this)."""
        formula = self.spec.roofline.min_flops or self.spec.roofline.flops
        return float(expressions.evaluate(formula, workload.axes))

    def bytes_moved(self, workload: Workload) -> float:
        return float(expressions.evaluate(self.spec.roofline.bytes, workload.axes))

    def reference_bytes(self, workload: Workload) -> float | None:
        """The bytes the reference's eager dataflow moves, where the task states them."""
        formula = self.spec.roofline.reference_bytes
        return None if formula is None else float(expressions.evaluate(formula, workload.axes))

    def shape(self, dims: list[str | int], workload: Workload) -> tuple[int, ...]:
        return tuple(int(d) if isinstance(d, int) else int(expressions.evaluate(d, workload.axes)) for d in dims)

    def size(self, formula: str, workload: Workload) -> int:
        """An axis expression's value at `workload` (a list's length or element count, say)."""
        return int(expressions.evaluate(formula, workload.axes))

    def list_lengths(self, workload: Workload) -> dict[str, int]:
        """The length of each tensor-list input at `workload` (empty for a task without lists)."""
        return {
            a.name: int(expressions.evaluate(a.count, workload.axes))
            for a in self.spec.signature.inputs
            if isinstance(a, TensorListArg)
        }

    def tensor_names(self, workload: Workload, *, state_only: bool = False) -> list[str]:
        """The names the harness moves and compares each tensor input under at `workload`: a tensor's own
        name, and `name.i` for element i of a list (`element_name`)."""
        lengths = self.list_lengths(workload)
        names: list[str] = []
        for arg in self.spec.signature.inputs:
            if isinstance(arg, ScalarArg) or (state_only and not arg.state):
                continue
            names += [arg.name] if isinstance(arg, TensorArg) else [element_name(arg.name, i) for i in range(lengths[arg.name])]
        return names


def element_name(list_name: str, index: int) -> str:
    """The name element `index` of the list input `list_name` travels and is compared under."""
    return f"{list_name}.{index}"


def argument_of(name: str) -> str:
    """The input a moved tensor belongs to: `params.3` -> `params` (list elements), `q` -> `q`."""
    return name.split(".", 1)[0]
