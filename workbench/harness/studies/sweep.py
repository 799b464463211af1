"""`d2k-workbench bench sweep TASK`: the expert's configurations, as tasks/<task>/sweep.toml declares them, checked
and timed per workload.

The expert picks each call's configuration with one function (`chooser`, `config_for` by default) that returns
an instance of its configuration type (`config`). The sweep runs the expert once with that function watched to
learn the current configuration, builds the candidates from the declared grids (fields not named keep the
current values), and for each candidate replaces the function by one returning it: the expert's own code runs
unchanged otherwise. Each candidate is scored against the oracle as the checker scores a solution (calls.py)
and, on a GPU, timed with the harness's timer (CUDA events, the L2 flushed before every call, the launch cover);
the reference and the library baseline are timed the same way, and the expert's floor is the roofline's.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from workbench.catalog import expressions
from workbench.catalog.task import Task, Workload
from workbench.errors import UsageError
from workbench.harness.protocol.devices import expert_floor_ms, peaks_for
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution.timing import Clocks, Sleeper, TimingPlan, time_calls
from workbench.harness.studies.calls import Inputs, TaskCode, copied, interpreter_as_harness
from workbench.harness.studies.declared import Grid, SweepSpec

Show = Callable[[dict[str, Any]], None]


def fields_of(config: Any) -> dict[str, Any]:
    """A configuration's fields by name (a NamedTuple or a dataclass)."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    if hasattr(config, "_asdict"):
        return dict(config._asdict())
    raise UsageError(f"the expert's configuration {config!r} is neither a dataclass nor a NamedTuple")


def _matches(values: dict[str, Any], partial: dict[str, Any]) -> bool:
    return all(values.get(k) == v for k, v in partial.items())


def _kept(grid: Grid, values: dict[str, Any], axes: dict[str, int]) -> bool:
    if any(_matches(values, partial) for partial in grid.skip):
        return False
    env = {**axes, **{k: float(v) for k, v in values.items() if isinstance(v, (int, float))}}
    return all(expressions.evaluate(text, env, allow_compare=True) for text in grid.where)


def candidates(spec: SweepSpec, config_type: Callable[..., Any], current: Any, workload: Workload) -> list[Any]:
    """The current configuration, then every grid's candidates for `workload`, each once, in order."""
    base = fields_of(current)
    found: dict[Any, None] = {current: None}
    for grid in spec.grid:
        if grid.workloads and workload.name not in grid.workloads:
            continue
        unknown = sorted((set(grid.fields) | {k for t in [*grid.together, *grid.skip] for k in t}) - set(base))
        if unknown:
            raise UsageError(f"sweep.toml names fields {unknown} that the expert's {type(current).__name__} lacks")
        names = list(grid.fields)
        for combo in itertools.product(*(grid.fields[n] for n in names)):
            for together in grid.together or [{}]:
                values = {**base, **dict(zip(names, combo, strict=True)), **together}
                if _kept(grid, values, workload.axes):
                    found.setdefault(config_type(**values), None)
    return list(found)


def current_config(expert: ModuleType, chooser: str, inputs: Inputs) -> Any:
    """The configuration the expert picks for `inputs`: one call with its chooser watched."""
    original = getattr(expert, chooser, None)
    if not callable(original):
        raise UsageError(f"the expert has no function {chooser!r} (sweep.toml's chooser)")
    seen: list[Any] = []

    def watched(*args: Any, **kwargs: Any) -> Any:
        config = original(*args, **kwargs)
        seen.append(config)
        return config

    setattr(expert, chooser, watched)
    try:
        expert.run(**copied(inputs))
    finally:
        setattr(expert, chooser, original)
    if not seen:
        raise UsageError(f"the expert's run(...) never called {chooser}(...)")
    return seen[0]


class Timer:
    """The harness's timer for calls made in this process (GPU)."""

    def __init__(self, device: torch.device, max_time_s: float = 2.0) -> None:
        self.device = device
        self.clocks = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
        self.sleeper = Sleeper(self.clocks)
        self.plan = TimingPlan(max_time_s=max_time_s)

    def median_ms(self, fn: Callable[..., Any], inputs: Inputs) -> float:
        stats, _host = time_calls(fn, [inputs], self.clocks, self.device, "events", self.plan, self.sleeper)
        return stats.median_ms


def sweep_workload(
    code: TaskCode, spec: SweepSpec, expert: ModuleType, workload: Workload, limit: int | None, seconds: float, list_only: bool
) -> dict[str, Any]:
    """One workload's candidates: listed, or checked (and timed on a GPU)."""
    task, device = code.task, code.device
    made = code.make(workload.axes, 0)
    current = current_config(expert, spec.chooser, made)
    found = candidates(spec, getattr(expert, spec.config), current, workload)[:limit]
    if list_only:
        return {"workload": workload.name, "candidates": [repr(c) for c in found]}
    rule = task.tolerance_for(workload)
    views = code.views(rule)
    expected = code.expected(made, rule, views)
    timer = Timer(device) if device.type == "cuda" else None
    original, started = getattr(expert, spec.chooser), time.perf_counter()
    rows: list[dict[str, Any]] = []
    try:
        for config in found:
            if time.perf_counter() - started > seconds:
                rows.append({"config": f"(time cap: {len(found) - len(rows)} more not run)", "current": False})
                break
            setattr(expert, spec.chooser, lambda *args, config=config, **kwargs: config)
            verdict = code.verdict(lambda args: expert.run(**args), made, expected, rule, views)
            row: dict[str, Any] = {"config": repr(config), "current": config == current, "ratio": verdict.ratio}
            if not verdict.ok:
                row["error"] = verdict.error or f"fails the tolerance ({verdict.value})"
            elif timer is not None:
                row["ms"] = timer.median_ms(expert.run, copied(made))
            rows.append(row)
    finally:
        setattr(expert, spec.chooser, original)
    result: dict[str, Any] = {"workload": workload.name, "axes": dict(workload.axes), "device": str(device)}
    result["current_ok"] = any(r["current"] and "error" not in r for r in rows)
    if timer is not None:
        result.update(_baselines(code, timer, made, workload))
    result["rows"] = sorted(rows, key=lambda r: (r.get("ms") is None, r.get("ms") or 0.0))
    return result


def _baselines(code: TaskCode, timer: Timer, made: Inputs, workload: Workload) -> dict[str, Any]:
    task = code.task
    found: dict[str, Any] = {"reference_ms": timer.median_ms(code.reference.reference, copied(made))}
    if task.spec.library is not None:
        found["library_ms"] = timer.median_ms(getattr(code.reference, task.spec.library.function), copied(made))
    peaks = peaks_for(torch.cuda.get_device_name(code.device))
    found["floor_ms"] = expert_floor_ms(peaks, task, workload) if peaks is not None else None
    found["device_name"] = torch.cuda.get_device_name(code.device)
    return found


def run_sweep(
    task: Task,
    spec: SweepSpec,
    device: torch.device,
    workloads: list[str] | None,
    limit: int | None,
    seconds: float | None,
    list_only: bool,
    show: Show,
) -> None:
    """The sweep over the registered workloads on a GPU, the smoke workloads on the CPU (checked, not timed)."""
    own = task.spec.smoke_workloads if device.type == "cpu" else task.spec.workloads
    if workloads:
        unknown = [n for n in workloads if n not in {w.name for w in own}]
        if unknown:
            names = ", ".join(w.name for w in own)
            raise UsageError(f"task {task.id} has no workload {unknown[0]!r} on {device.type} (choose from {names})")
        own = [w for w in own if w.name in workloads]
    with interpreter_as_harness(device):
        code = TaskCode(task, device)
        expert = import_file(task.file("expert.py"), f"_study_{task.id}_expert")
        if not callable(getattr(expert, spec.config, None)):
            raise UsageError(f"the expert has no configuration type {spec.config!r} (sweep.toml's config)")
        for workload in own:
            show(sweep_workload(code, spec, expert, workload, limit, seconds or spec.seconds, list_only))
            if device.type == "cuda":
                torch.cuda.empty_cache()
