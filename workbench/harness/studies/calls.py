"""One call of a study: inputs made by the task's inputs.py (and scaled as the harness scales them), the oracle
and the reference computed on copies, a design run on copies, and its error against the oracle scored as the
checker scores it: the task's rule per compared value (views, state inputs and the reference's own error
included), reported as err / bound, so 1 is the edge of the tolerance."""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from workbench.catalog.task import CompareRule, ScalarArg, Task, TensorListArg, ToleranceRule, argument_of, element_name
from workbench.errors import UsageError
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution import interpreter_fix
from workbench.harness.studies.declared import EMULATIONS_FILE, Design

Inputs = dict[str, Any]
Values = dict[str, torch.Tensor]
Views = Callable[[Values, Inputs], Values]
Run = Callable[[Inputs], Any]  # a design: the call's inputs (its own copies) in, run(...)'s result out


@dataclass(frozen=True)
class Expected:
    """What the checker would compare a call's results with: the oracle's compared values and state, and the
    reference's compared values where a rule bounds the error by the reference's own."""

    values: Values
    state: Values
    reference: Values | None


@dataclass(frozen=True)
class Verdict:
    """One design on one call: the worst compared value's err / bound (inf for NaN, Inf, invalid outputs or
    an exception), whether every value passes the rule, and which value was worst."""

    ratio: float
    ok: bool
    value: str
    error: str = ""  # the exception the design (or the views of its outputs) raised


@contextlib.contextmanager
def interpreter_as_harness(device: torch.device) -> Iterator[None]:
    """On the CPU, the Triton interpreter as the harness's solution process has it (exact bfloat16 tl.dot, the
    GPU's casts, ...; the caller set TRITON_INTERPRET=1 before Triton was imported), removed afterwards."""
    if device.type != "cpu":
        yield
        return
    uninstall = interpreter_fix.install()
    try:
        yield
    finally:
        uninstall()


def copied(inputs: Inputs) -> Inputs:
    """The inputs with every tensor (and every tensor of a list) cloned: a design may update its state inputs."""
    out: Inputs = {}
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor):
            out[name] = value.clone()
        elif isinstance(value, list) and all(isinstance(t, torch.Tensor) for t in value):
            out[name] = [t.clone() for t in value]
        else:
            out[name] = value
    return out


def rule_ratio(
    value: torch.Tensor, oracle: torch.Tensor, rule: CompareRule, reference: torch.Tensor | None
) -> tuple[float, bool]:
    """(err / bound, passes): the per-matrix part's error over its bound and the elementwise part's largest
    |got - oracle| / (atol + rtol |oracle|), the worse of the two; inf where the rule fails on NaN or Inf, or
    where an elementwise rule allows no difference at all and one differs."""
    result = compare(value, oracle, rule, reference)
    worst = 0.0
    if rule.matrix_rel_fro is not None:
        worst = result.rel_err / (result.bound or rule.matrix_rel_fro)
    if (rule.atol is not None or rule.rtol is not None) and value.numel():
        diff = (value.double() - oracle.double()).abs()
        allowed = (rule.atol or 0.0) + (rule.rtol or 0.0) * oracle.double().abs()
        zero = torch.zeros_like(diff)
        over = torch.where(allowed > 0, diff / allowed.clamp_min(1e-300), torch.where(diff > 0, zero + math.inf, zero))
        worst = max(worst, float(over.max()))
    if not result.ok and worst <= 1:
        worst = math.inf  # NaN or Inf where the oracle is finite
    return worst, result.ok


class TaskCode:
    """A task's reference.py and inputs.py, its false_failure.py when a design needs it, and the designs' code."""

    def __init__(self, task: Task, device: torch.device, scratch: Path | None = None) -> None:
        self.task = task
        self.device = device
        self.scratch = scratch or Path(tempfile.mkdtemp(prefix=f"d2k-study-{task.id}-"))
        self.reference = import_file(task.file("reference.py"), f"_study_{task.id}_reference")
        self.inputs = import_file(task.file("inputs.py"), f"_study_{task.id}_inputs")
        self._emulations: ModuleType | None = None
        self.outputs = [s.name for s in task.spec.signature.outputs]
        if any(s.mode != "return" for s in task.spec.signature.outputs) or task.spec.sampling is not None:
            raise UsageError(f"task {task.id}: studies compare returned, non-drawn outputs only")

    # -- code ----------------------------------------------------------------------------------------
    def emulation(self, name: str) -> Callable[..., Any]:
        """A function of the task's false_failure.py."""
        if self._emulations is None:
            path = self.task.file(EMULATIONS_FILE)
            if not path.is_file():
                raise UsageError(f"task {self.task.id}: a design names an emulation, but {path} does not exist")
            self._emulations = import_file(path, f"_study_{self.task.id}_emulations")
        fn = getattr(self._emulations, name, None)
        if not callable(fn):
            raise UsageError(f"task {self.task.id}: {EMULATIONS_FILE} has no function {name!r}")
        return fn  # type: ignore[no-any-return]

    def _path(self, name: str) -> Path:
        """A file in the task's folder, else from the repository root (the folder above tasks/)."""
        for path in (self.task.file(name), self.task.dir.parent.parent / name):
            if path.is_file():
                return path
        raise UsageError(f"task {self.task.id}: no file {name!r} in its folder or the repository")

    def design(self, design: Design) -> Run:
        """The design as a function of the call's inputs."""
        if design.emulation is not None:
            emulated, ref, kwargs = self.emulation(design.emulation), self.reference, dict(design.with_)
            return lambda inputs: emulated(ref, inputs, **kwargs)
        if design.reference is not None:
            function = getattr(self.reference, design.reference, None)
            if not callable(function):
                raise UsageError(f"task {self.task.id}: reference.py has no function {design.reference!r}")
            return lambda inputs: function(**inputs)
        assert design.solution is not None
        path = self._path(design.solution)
        if design.cheat is not None:  # the red-team convention: the honest run becomes honest_run, the cheat adds run
            honest = path.read_text(encoding="utf-8").replace("\ndef run(", "\ndef honest_run(")
            path = self.scratch / f"{design.name}.py"
            path.write_text(honest + "\n\n" + self._path(design.cheat).read_text(encoding="utf-8"), encoding="utf-8")
        module = import_file(path, f"_study_{self.task.id}_{design.name}")
        run = module.run
        return lambda inputs: run(**inputs)

    # -- inputs --------------------------------------------------------------------------------------
    def make(self, axes: dict[str, int], seed: int) -> Inputs:
        made: Inputs = self.inputs.make_inputs(axes, seed, self.device)
        return made

    def scaled(self, inputs: Inputs) -> Inputs:
        """The inputs with every floating tensor of 16 bits or more multiplied by the task's input_scale, as
        the harness's scaled trial makes them (8-bit floats, integers and scalars keep their values)."""
        scale = self.task.spec.checks.input_scale
        out = copied(inputs)
        for arg in self.task.spec.signature.inputs:
            if isinstance(arg, ScalarArg):
                continue
            value = out[arg.name]
            for tensor in value if isinstance(arg, TensorListArg) else [value]:
                if tensor.is_floating_point() and tensor.element_size() >= 2:
                    tensor.mul_(scale)
        return out

    # -- results -------------------------------------------------------------------------------------
    def results(self, run: Run, inputs: Inputs) -> tuple[Values, Values]:
        """(outputs by name, state inputs after the call by compared name) of one run on copies of `inputs`."""
        args = copied(inputs)
        result = run(args)
        values = [] if not self.outputs else [result] if len(self.outputs) == 1 else list(result)
        if len(values) != len(self.outputs) or not all(isinstance(v, torch.Tensor) for v in values):
            raise ValueError(f"gave {len(values)} values where run(...) returns {len(self.outputs)} tensors")
        state: Values = {}
        for arg in self.task.spec.signature.inputs:
            if isinstance(arg, ScalarArg) or not arg.state:
                continue
            if isinstance(arg, TensorListArg):
                state.update({element_name(arg.name, i): t for i, t in enumerate(args[arg.name])})
            else:
                state[arg.name] = args[arg.name]
        return dict(zip(self.outputs, values, strict=True)), state

    def views(self, rule: ToleranceRule, override: Views | None = None) -> Views:
        """What is compared: the outputs, or the task's views of them (or a study's own views)."""
        if override is not None:
            return override
        if rule.views is None:
            return lambda outputs, inputs: outputs
        fn = getattr(self.reference, rule.views)
        return lambda outputs, inputs: fn(dict(outputs), inputs)

    def expected(self, inputs: Inputs, rule: ToleranceRule, views: Views, reference: Run | None = None) -> Expected:
        """The oracle's (and, where a rule needs it, the reference's) compared values on `inputs`."""
        with torch.no_grad():
            oracle_fn = getattr(self.reference, rule.oracle)
            outputs, state = self.results(lambda args: oracle_fn(**args), inputs)
            needs_reference = any(r.reference_error_factor is not None for r in [rule, *rule.outputs.values()])
            ref_values = None
            if needs_reference:
                ref_run = reference or (lambda args: self.reference.reference(**args))
                ref_values = views(self.results(ref_run, inputs)[0], inputs)
            return Expected(views(outputs, inputs), state, ref_values)

    def verdict(self, run: Run, inputs: Inputs, expected: Expected, rule: ToleranceRule, views: Views) -> Verdict:
        """Score one design on one call as the checker would (every compared value and state input)."""
        try:
            outputs, state = self.results(run, inputs)
            got = views(outputs, inputs)
            pairs = [(name, got[name], expected.values[name], rule.rule_for(name)) for name in expected.values]
            pairs += [(name, state[name], expected.state[name], rule.rule_for(argument_of(name))) for name in expected.state]
            worst, ok, where = 0.0, True, ""
            for name, value, oracle, value_rule in pairs:
                ref = expected.reference.get(name) if expected.reference is not None else None
                ratio, passed = rule_ratio(value, oracle, value_rule, ref)
                ok = ok and passed
                if ratio >= worst:
                    worst, where = ratio, name
            return Verdict(worst, ok, where)
        except Exception as exc:  # a wrong design may give outputs the views refuse, or none at all
            return Verdict(math.inf, False, "", f"{type(exc).__name__}: {str(exc)[:100]}")
