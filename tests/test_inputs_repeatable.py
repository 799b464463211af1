"""Every task's make_inputs gives the same bytes twice from one seed: the harness checks sampled timed calls and
inputs made in the solution's process on inputs made again from the trial's seed (and stops a task that is not
repeatable as a task_error). On the CPU over the smoke workloads; on a GPU over the smallest registered one."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.catalog.task import Task, Workload
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution.transport import digest, digest_many

REPO = Path(__file__).resolve().parent.parent
TASKS = Catalog(REPO / "tasks", REPO / "guidance").tasks()


def _fingerprint(made: dict[str, object]) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, value in made.items():
        if type(value) is torch.Tensor:
            out[name] = (value.dtype, tuple(value.shape), digest(value))
        elif isinstance(value, (list, tuple)) and all(type(v) is torch.Tensor for v in value):
            out[name] = digest_many(list(value))
        else:
            out[name] = repr(value)
    return out


def _repeatable(task: Task, workload: Workload, device: str) -> None:
    inputs = import_file(task.file("inputs.py"), f"repeat_{task.id}")
    first = _fingerprint(inputs.make_inputs(workload.axes, 1234, device))
    second = _fingerprint(inputs.make_inputs(workload.axes, 1234, device))
    assert first == second, f"{task.id}/{workload.name}: {[n for n in first if first[n] != second.get(n)]} differ"
    other = _fingerprint(inputs.make_inputs(workload.axes, 1235, device))
    assert other != first, f"{task.id}/{workload.name}: another seed made the same inputs"


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_make_inputs_repeats_from_a_seed_on_the_cpu(task: Task) -> None:
    _repeatable(task, task.spec.smoke_workloads[0], "cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_make_inputs_repeats_from_a_seed_on_the_gpu(task: Task) -> None:
    smallest = min(task.spec.workloads, key=lambda w: math.prod(int(v) for v in w.axes.values()))
    _repeatable(task, smallest, "cuda")
    torch.cuda.empty_cache()
