"""Correctness trials of one workload: fresh inputs, refilled buffers, scaled inputs, re-checks.

Each call is checked for output shape, dtype and layout, aliasing, unchanged inputs, state updates and
numerical agreement with the oracle. The oracle runs only after the solution has returned, on copies of
the inputs taken before the call, and its results are dropped before the solution runs again: no
expected value exists while solution code runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from workbench.catalog.task import OutputSpec, ScalarArg, Task, TensorArg, Workload
from workbench.harness.compare import compare
from workbench.harness.guard import CallRecord, Guard
from workbench.harness.report import Status, Violation

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2, "int64": torch.int64,
    "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}


class TrialFailure(Exception):
    """A check failed: carries the status the evaluation gets."""

    def __init__(self, status: Status, message: str, violations: list[Violation] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.violations = violations or []


@dataclass
class TrialStats:
    trials: int = 0
    max_abs_err: float = 0.0
    rel_err: float = 0.0
    bound: float | None = None
    launches: int = 0
    launch_names: set[str] = field(default_factory=set)


def trial_seed(secret: int, workload: str, trial: int) -> int:
    digest = hashlib.sha256(f"{secret}:{workload}:{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


def _bits(t: torch.Tensor) -> torch.Tensor:
    """A bitwise view for exact comparison (NaN == NaN, -0 != +0)."""
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.detach().contiguous().view(width)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(_bits(a), _bits(b))


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    start = t.untyped_storage().data_ptr()
    return start, start + t.untyped_storage().nbytes()


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    (a0, a1), (b0, b1) = _storage_span(a), _storage_span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def _poison(t: torch.Tensor) -> None:
    if t.is_floating_point():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


class WorkloadChecker:
    """Runs the correctness trials of one workload against one solution."""

    def __init__(
        self,
        task: Task,
        workload: Workload,
        run: Callable[..., Any],
        guard: Guard,
        reference_module: ModuleType,
        make_inputs: Callable[..., dict[str, Any]],
        device: torch.device,
        secret: int,
    ) -> None:
        self.task = task
        self.spec = task.spec
        self.workload = workload
        self.run = run
        self.guard = guard
        self.reference_module = reference_module
        self.make_inputs = make_inputs
        self.device = device
        self.secret = secret
        self.stats = TrialStats()
        self.kept: list[tuple[int, list[torch.Tensor], list[torch.Tensor]]] = []  # (trial, outputs, copies)
        self.profile_next = False  # profile the next call's GPU kernels (GPU only)

    # -- inputs -------------------------------------------------------------------------------
    def fresh_inputs(self, trial: int) -> dict[str, Any]:
        seed = trial_seed(self.secret, self.workload.name, trial)
        inputs = self.make_inputs(self.workload.axes, seed, self.device)
        for arg in self.spec.signature.inputs:
            if arg.name not in inputs:
                raise RuntimeError(f"task inputs.py did not produce input {arg.name!r}")
        return inputs

    def refill(self, inputs: dict[str, Any], trial: int) -> dict[str, Any]:
        """New values written into the same buffers (defeats caches keyed on addresses)."""
        new = self.fresh_inputs(trial)
        for arg in self.spec.signature.inputs:
            if isinstance(arg, TensorArg):
                inputs[arg.name].copy_(new[arg.name])
        return inputs

    def scaled(self, trial: int, scale: float) -> dict[str, Any]:
        inputs = self.fresh_inputs(trial)
        for arg in self.spec.signature.inputs:
            value = inputs[arg.name]
            if isinstance(arg, TensorArg) and value.is_floating_point():
                value.mul_(scale)
        return inputs

    # -- one call -----------------------------------------------------------------------------
    def _preallocated(self) -> dict[str, torch.Tensor]:
        outs = {}
        for spec in self.spec.signature.outputs:
            if spec.mode == "preallocated":
                t = torch.empty(self.task.shape(spec.shape, self.workload), dtype=DTYPES[spec.dtype], device=self.device)
                _poison(t)
                outs[spec.name] = t
        return outs

    def _poison_allocator(self) -> None:
        """Fill memory the caching allocator will hand out next, so unwritten outputs show as NaN."""
        blocks = []
        for spec in self.spec.signature.outputs:
            if spec.mode == "return":
                t = torch.empty(self.task.shape(spec.shape, self.workload), dtype=DTYPES[spec.dtype], device=self.device)
                _poison(t)
                blocks.append(t)
        del blocks

    def call(self, inputs: dict[str, Any]) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        """Call the solution under the guard; return its outputs in signature order."""
        prealloc = self._preallocated()
        self._poison_allocator()
        args = {arg.name: inputs[arg.name] for arg in self.spec.signature.inputs}
        if self.profile_next:
            self.profile_next = False
            result, record = self._profiled_call(args, prealloc)
        else:
            result, record = self.guard.call(self.run, **args, **prealloc)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.stats.launches += record.launches
        self.stats.launch_names.update(record.launch_names)
        if record.violations:
            raise TrialFailure("policy_violation", record.violations[0].describe(), record.violations)
        returned_specs = [s for s in self.spec.signature.outputs if s.mode == "return"]
        if len(returned_specs) == 1:
            returned = [result]
        elif not returned_specs:
            returned = []
        elif isinstance(result, (tuple, list)) and len(result) == len(returned_specs):
            returned = list(result)
        else:
            raise TrialFailure("incorrect_shape", f"run(...) must return {len(returned_specs)} tensors, got {type(result).__name__}")
        outputs = []
        for spec in self.spec.signature.outputs:
            outputs.append(returned.pop(0) if spec.mode == "return" else prealloc[spec.name])
        return outputs, prealloc

    def _profiled_call(self, args: dict[str, Any], prealloc: dict[str, torch.Tensor]) -> tuple[Any, CallRecord]:
        """One call under the profiler: every GPU kernel it ran must be one of its Triton launches."""
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize(self.device)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            result, record = self.guard.call(self.run, **args, **prealloc)
            torch.cuda.synchronize(self.device)
        launched = set(record.launch_names)
        foreign = sorted(
            {
                e.name
                for e in prof.events()
                if str(getattr(e, "device_type", "")).endswith("CUDA")
                and not any(e.name.startswith(n) for n in launched)
                and not e.name.startswith(("Memset", "Memcpy", "[memory]"))
            }
        )
        if foreign:
            detail = f"the GPU ran kernels that are not the call's Triton launches: {', '.join(foreign[:3])}"
            record.violations.append(Violation(rule="non_triton_kernel", detail=detail))
        return result, record

    def _check_output(self, spec: OutputSpec, out: Any) -> None:
        if not isinstance(out, torch.Tensor):
            raise TrialFailure("incorrect_shape", f"output {spec.name} is a {type(out).__name__}, not a tensor")
        expected = self.task.shape(spec.shape, self.workload)
        if tuple(out.shape) != expected:
            raise TrialFailure("incorrect_shape", f"output {spec.name} has shape {list(out.shape)}, expected {list(expected)}")
        if out.dtype != DTYPES[spec.dtype]:
            raise TrialFailure("incorrect_dtype", f"output {spec.name} is {out.dtype}, expected torch.{spec.dtype}")
        if out.device.type != self.device.type:
            raise TrialFailure("incorrect_shape", f"output {spec.name} is on {out.device}, expected {self.device}")
        if spec.layout == "contiguous" and not out.is_contiguous():
            raise TrialFailure("incorrect_shape", f"output {spec.name} must be contiguous (strides {list(out.stride())})")

    # -- the checks -----------------------------------------------------------------------------
    def check_call(self, trial: int, inputs: dict[str, Any], keep: bool = True) -> None:
        tensors = {a.name: inputs[a.name] for a in self.spec.signature.inputs if isinstance(a, TensorArg)}
        before = {name: t.detach().clone() for name, t in tensors.items()}
        outputs, _ = self.call(inputs)
        for spec, out in zip(self.spec.signature.outputs, outputs, strict=True):
            self._check_output(spec, out)
            for name, t in tensors.items():
                if _overlaps(out, t):
                    raise TrialFailure(
                        "policy_violation", f"output {spec.name} shares memory with input {name}",
                        [Violation(rule="output_aliases_input", detail=f"output {spec.name} aliases input {name}")],
                    )
        state_names = {a.name for a in self.spec.signature.inputs if isinstance(a, TensorArg) and a.state}
        for name, t in tensors.items():
            if name not in state_names and not _same_bits(t, before[name]):
                raise TrialFailure("input_mutated", f"input {name} was changed by the call")
        self._compare_with_oracle(trial, inputs, before, outputs, state_names)
        if keep:
            self.kept.append((trial, outputs, [o.detach().clone() for o in outputs]))

    def _oracle_outputs(self, inputs: dict[str, Any], before: dict[str, torch.Tensor], fn_name: str) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        fn = getattr(self.reference_module, fn_name)
        args: dict[str, Any] = {}
        for arg in self.spec.signature.inputs:
            args[arg.name] = before[arg.name].clone() if isinstance(arg, TensorArg) else inputs[arg.name]
        prealloc = {}
        for spec in self.spec.signature.outputs:
            if spec.mode == "preallocated":
                prealloc[spec.name] = torch.empty(
                    self.task.shape(spec.shape, self.workload), dtype=DTYPES[spec.dtype], device=self.device
                )
        result = fn(**args, **prealloc)
        returned = [s for s in self.spec.signature.outputs if s.mode == "return"]
        values = [result] if len(returned) == 1 else list(result or [])
        outs = [values.pop(0) if s.mode == "return" else prealloc[s.name] for s in self.spec.signature.outputs]
        states = {a.name: args[a.name] for a in self.spec.signature.inputs if isinstance(a, TensorArg) and a.state}
        return outs, states

    def _compare_with_oracle(
        self, trial: int, inputs: dict[str, Any], before: dict[str, torch.Tensor], outputs: list[torch.Tensor],
        state_names: set[str],
    ) -> None:
        tol = self.task.tolerance_for(self.workload)
        with torch.no_grad():
            oracle, oracle_state = self._oracle_outputs(inputs, before, tol.oracle)
            reference = None
            if tol.reference_error_factor is not None:
                reference, _ = self._oracle_outputs(inputs, before, "reference")
        for index, (spec, out) in enumerate(zip(self.spec.signature.outputs, outputs, strict=True)):
            result = compare(out, oracle[index], tol, reference[index] if reference is not None else None)
            self._record(result.max_abs_err, result.rel_err, result.bound)
            if not result.ok:
                raise TrialFailure("incorrect_numerical", f"output {spec.name} (trial {trial}): {result.message}")
        for name in state_names:
            result = compare(inputs[name], oracle_state[name], tol)
            if not result.ok:
                raise TrialFailure("state_mismatch", f"state {name} after the call (trial {trial}): {result.message}")
        del oracle, oracle_state, reference

    def _record(self, max_abs: float, rel: float, bound: float | None) -> None:
        self.stats.max_abs_err = max(self.stats.max_abs_err, max_abs)
        if rel >= self.stats.rel_err:
            self.stats.rel_err = rel
            self.stats.bound = bound

    def recheck_kept(self) -> None:
        """Outputs returned earlier must be unchanged by later calls (no recycled output buffers)."""
        for trial, outputs, copies in self.kept:
            for spec, out, copy in zip(self.spec.signature.outputs, outputs, copies, strict=True):
                if not _same_bits(out, copy):
                    raise TrialFailure(
                        "incorrect_numerical",
                        f"output {spec.name} of trial {trial} changed after later calls (output buffers reused)",
                    )

    def check_contract(self, inputs: dict[str, Any]) -> None:
        """Scalars pinned to one value must be validated: any other value raises ValueError."""
        for arg in self.spec.signature.inputs:
            if isinstance(arg, ScalarArg) and arg.value is not None and not isinstance(arg.value, bool):
                bad = dict(inputs)
                bad[arg.name] = arg.value + 1
                args = {a.name: bad[a.name] for a in self.spec.signature.inputs}
                try:
                    self.run(**args, **self._preallocated())
                except ValueError:
                    continue
                except Exception as exc:  # noqa: BLE001 - any other outcome breaks the contract
                    detail = f"run({arg.name}={arg.value + 1}) raised {type(exc).__name__}, expected ValueError"
                else:
                    detail = f"run({arg.name}={arg.value + 1}) returned; {arg.name} must be {arg.value} (ValueError otherwise)"
                raise TrialFailure("policy_violation", detail, [Violation(rule="contract", detail=detail)])
