"""What the import probe is asked and what it answers (no torch): one request per peer problem, one result.

The result comes from a process that ran code from outside the project, so it is validated field by field
(`ProbeResult.model_validate_json`); a line that does not validate is the problem's failure, never the
importer's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench.catalog.task import TensorDtype

PeerKind = Literal["kernelbench", "gpumode"]
ProbeDtype = TensorDtype  # the dtypes a task's signature can hold
SkipReason = Literal[
    "not_a_problem",
    "does_not_load",
    "random_or_stateful",
    "non_tensor_output",
    "unseeded_generator",
    "seed_ignored",
    "hidden_tensors",
    "unsupported_inputs",
    "unsupported_checker",
    "cpu_failure",
    "too_large",
    "timeout",
    "crashed",
    "in_the_way",
]
SKIP_TEXT: dict[str, str] = {
    "not_a_problem": "not a problem of the format",
    "does_not_load": "the problem's file does not load",
    "random_or_stateful": "stateful or random module",
    "non_tensor_output": "outputs that are not tensors",
    "unseeded_generator": "inputs from an unseeded global generator",
    "seed_ignored": "inputs that ignore the seed",
    "hidden_tensors": "tensors outside the parameters and buffers",
    "unsupported_inputs": "inputs run(...) cannot take",
    "unsupported_checker": "a checker the format cannot express",
    "cpu_failure": "does not run on the CPU",
    "too_large": "too large to probe",
    "timeout": "probe timed out",
    "crashed": "probe crashed",
    "in_the_way": "a task folder that is not an import is in the way",
}
Dim = Annotated[int, Field(ge=0, le=2**40)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProbeRequest(_Strict):
    """One problem: its files' text (`main` is the module to run; the others are what it imports), the sizes
    to describe it at (KernelBench: the free sizes; GPU MODE: generate_input's keyword arguments), candidate
    reduced sizes in order of preference, the CPU's element budget for them, and perturbed sizes."""

    kind: PeerKind
    sources: dict[str, str]
    main: str
    registered: list[dict[str, Any]] = Field(min_length=1)
    smoke_candidates: list[dict[str, Any]] = Field(min_length=1)
    smoke_count: int = Field(default=1, ge=1, le=8)
    # sizes with one size changed at a time, described by shape only (no values): they tell apart sizes
    # that happen to be equal at every workload (height = width), so each dimension names the right one
    perturbations: list[dict[str, Any]] = []
    budget: int = Field(ge=1)
    precision: Literal["fp32", "fp16", "bf16"] = "fp32"
    timeout_s: float = Field(default=120.0, gt=0)


class TensorInfo(_Strict):
    dtype: ProbeDtype
    shape: list[Dim] = Field(max_length=16)
    contiguous: bool = True


class ValueInfo(_Strict):
    """One argument: a tensor, a number, or something run(...) cannot take (`other`, with its type's name)."""

    kind: Literal["tensor", "int", "float", "bool", "other"]
    tensor: TensorInfo | None = None
    value: bool | int | float | None = None
    type_name: str = Field(default="", max_length=100)


class Observation(_Strict):
    """The problem at one set of sizes: its arguments in order, a model's parameters and buffers (KernelBench),
    its outputs, and for GPU MODE whether the data is one tensor and which element the reference returns."""

    sizes: dict[str, int]
    args: list[ValueInfo] = Field(max_length=256)
    params: list[tuple[str, TensorInfo]] = Field(default=[], max_length=4096)
    buffers: list[tuple[str, TensorInfo]] = Field(default=[], max_length=4096)
    outputs: list[TensorInfo] = Field(min_length=1, max_length=64)
    output_is_tuple: bool = False
    single: bool = False
    alias: int | None = None
    elements: int = Field(ge=0)


class ProbeResult(_Strict):
    ok: bool
    skip: SkipReason | None = None
    detail: str = Field(default="", max_length=2000)
    registered: list[Observation] = []
    smoke: list[Observation] = []
    extra: list[Observation] = []  # the perturbations that ran
    mutated_buffers: list[str] = []
    seconds: float = 0.0
