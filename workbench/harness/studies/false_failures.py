"""`d2k-workbench bench false-failures TASK`: how close honest designs come to the task's tolerance, and how far
wrong ones land from it, on many fresh calls.

For every workload studied (the smoke workloads on the CPU under the Triton interpreter, the registered ones on
a GPU, and the shapes the study declares), fresh calls are made from seeds 0, 1, ... with the task's inputs.py,
and after every `scaled_every`-th one a call on the same inputs scaled as the harness's scaled trial scales them.
Each design declared in tasks/<task>/false_failure.toml runs on copies of each call's inputs and is scored as the
checker scores a solution (calls.py). An honest design must pass every call (a failure is a false failure: the
tolerance would reject an honest solution); a wrong one should fail every call it is counted on.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from workbench.catalog import expressions
from workbench.catalog.task import ScalarArg, Task, ToleranceRule, Workload
from workbench.errors import UsageError
from workbench.harness.studies.calls import Run, TaskCode, Verdict, Views, interpreter_as_harness
from workbench.harness.studies.declared import Design, FalseFailureSpec


@dataclass
class Tally:
    """One design's verdicts over one kind of call (fresh or scaled)."""

    ratios: list[float] = field(default_factory=list)
    failing: int = 0
    worst_value: str = ""

    def add(self, verdict: Verdict) -> None:
        if not self.ratios or verdict.ratio >= max(self.ratios):
            self.worst_value = verdict.error or verdict.value
        self.ratios.append(verdict.ratio)
        self.failing += not verdict.ok

    def summary(self) -> dict[str, Any]:
        if not self.ratios:
            return {"calls": 0}
        return {
            "calls": len(self.ratios),
            "max": max(self.ratios),
            "min": min(self.ratios),
            "median": statistics.median(self.ratios),
            "failing": self.failing,
            "worst_value": self.worst_value,
        }


def tail_probability(ratios: list[float]) -> float | None:
    """P(err / bound > 1) per call from a log-normal fit to the ratios (an honest design's tail beyond the calls
    run); None with fewer than 10 finite positive ratios."""
    logs = [math.log(r) for r in ratios if 0 < r < math.inf]
    if len(logs) < 10:
        return None
    mu, sigma = statistics.fmean(logs), statistics.stdev(logs)
    if sigma == 0:
        return 0.0 if mu < 0 else 1.0
    return 0.5 * math.erfc(-mu / (sigma * math.sqrt(2)))


@dataclass
class Row:
    """One design at one workload."""

    workload: str
    design: str
    honest: bool
    fresh: Tally
    scaled: Tally
    note: str = ""

    @property
    def false_failures(self) -> int:
        return self.fresh.failing + self.scaled.failing if self.honest else 0

    @property
    def missed(self) -> int:
        """Counted calls a wrong design passed."""
        return 0 if self.honest else len(self.fresh.ratios) + len(self.scaled.ratios) - self.fresh.failing - self.scaled.failing

    def as_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "design": self.design,
            "honest": self.honest,
            "fresh": self.fresh.summary(),
            "scaled": self.scaled.summary(),
            "tail_p_fail": tail_probability(self.fresh.ratios) if self.honest else None,
            "note": self.note,
        }


@dataclass(frozen=True)
class Case:
    """A workload of the study: its axes, the rule that applies, the designs run there and how many calls."""

    workload: Workload
    rule: ToleranceRule
    designs: list[Design]
    calls: int
    scaled_every: int
    reference: str | None = None  # an emulation standing in for the reference (shapes only)
    views: str | None = None


def cases(task: Task, spec: FalseFailureSpec, device: torch.device, calls: int, only: list[str] | None) -> list[Case]:
    """The workloads studied on `device`, in order: the task's (smoke on the CPU, registered on a GPU), then the
    declared shapes; `only` keeps the named ones (UsageError for a name that is none of them)."""
    own = task.spec.smoke_workloads if device.type == "cpu" else task.spec.workloads
    found = [Case(w, task.tolerance_for(w), list(spec.design), calls, spec.scaled_every) for w in own]
    for shape in spec.shape:
        axes = {**(task.workload(shape.workload).axes if shape.workload else {}), **shape.axes}
        rule = (task.spec.tolerance.smoke or task.spec.tolerance) if shape.rule == "smoke" else task.spec.tolerance
        every = spec.scaled_every if shape.scaled_every is None else shape.scaled_every
        workload = Workload(name=shape.name, axes=axes)
        designs = spec.designs_named(shape.designs)
        found.append(Case(workload, rule, designs, min(calls, shape.calls), every, shape.reference, shape.views))
    if only:
        names = [c.workload.name for c in found]
        unknown = [n for n in only if n not in names]
        if unknown:
            choices = ", ".join(names)
            raise UsageError(f"task {task.id} studies no workload {unknown[0]!r} on {device.type} (choose from {choices})")
        found = [c for c in found if c.workload.name in only]
    return found


def _counted(design: Design, inputs: dict[str, Any], task: Task, axes: dict[str, int]) -> bool:
    if design.counted_when is None:
        return True
    scalars = {a.name: inputs[a.name] for a in task.spec.signature.inputs if isinstance(a, ScalarArg)}
    env = {**axes, **{k: float(v) for k, v in scalars.items() if isinstance(v, (int, float))}}
    return bool(expressions.evaluate(design.counted_when, env, allow_compare=True))


def run_case(code: TaskCode, case: Case, runs: dict[str, Run]) -> list[Row]:
    """Every design of the case on its calls."""
    task = code.task
    views: Views = code.views(case.rule, _views(code, case.views))
    reference = _reference(code, case.reference)
    tallies = {d.name: (Tally(), Tally()) for d in case.designs}
    for seed in range(case.calls):
        made = code.make(case.workload.axes, seed)
        trials = [(False, made)]
        if case.scaled_every and seed % case.scaled_every == 0 and task.spec.checks.input_scale:
            trials.append((True, code.scaled(made)))
        for is_scaled, inputs in trials:
            expected = code.expected(inputs, case.rule, views, reference)
            for design in case.designs:
                if seed % design.every or not _counted(design, inputs, task, case.workload.axes):
                    continue
                tallies[design.name][is_scaled].add(code.verdict(runs[design.name], inputs, expected, case.rule, views))
            del expected
        del made, trials
    done = [d for d in case.designs if tallies[d.name][0].ratios]
    return [Row(case.workload.name, d.name, d.honest, *tallies[d.name], note=d.note) for d in done]


def _views(code: TaskCode, name: str | None) -> Views | None:
    if name is None:
        return None
    fn, ref = code.emulation(name), code.reference
    return lambda outputs, inputs: fn(ref, outputs, inputs)


def _reference(code: TaskCode, name: str | None) -> Run | None:
    if name is None:
        return None
    fn, ref = code.emulation(name), code.reference
    return lambda inputs: fn(ref, inputs)


def run_study(
    task: Task,
    spec: FalseFailureSpec,
    device: torch.device,
    calls: int,
    workloads: list[str] | None = None,
    on_case: Callable[[Case, list[Row], float], None] | None = None,
) -> list[Row]:
    """The study on `device` (cpu: under the Triton interpreter, which the caller sets up before Triton is
    imported). `on_case` sees each workload's rows as they are done, with the seconds they took."""
    plan = cases(task, spec, device, calls, workloads)
    rows: list[Row] = []
    with interpreter_as_harness(device):
        code = TaskCode(task, device)
        runs = {d.name: code.design(d) for d in spec.design}
        for case in plan:
            started = time.perf_counter()
            done = run_case(code, case, runs)
            rows += done
            if on_case is not None:
                on_case(case, done, time.perf_counter() - started)
    return rows
