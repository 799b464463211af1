"""Time the references of tasks that have no expert solution (imported ones) on a GPU: one process, torch.

`python -m workbench.harness.probe.reference_bench --tasks-dir DIR [TASK...] [--device cuda]` prints one JSON
line per workload: the reference's median, its timing method (CUDA events, or graph replay for calls under
the harness's threshold, as the checker decides), and the reference's floor fraction. The reference is
timed as the checker times it (`solution.timing.time_calls`: L2 flushed, a blocking kernel before each
call, rotated inputs made by the task's inputs.py). The task's code is the task's own, as trusted as the
checker treats it; no solution runs here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from workbench.catalog.loader import load_task
from workbench.catalog.task import Task
from workbench.harness.protocol.devices import peaks_for, reference_floor_ms
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution.timing import Clocks, TimingPlan, choose_mode, time_calls

INPUT_SETS = 3  # rotated input sets per workload, as the checker's timing slots


def bench_task(task: Task, device: torch.device, max_time_s: float) -> list[dict[str, object]]:
    reference = import_file(task.file("reference.py"), f"_d2k_bench_reference_{task.id}")
    inputs = import_file(task.file("inputs.py"), f"_d2k_bench_inputs_{task.id}")
    clocks = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
    peaks = peaks_for(torch.cuda.get_device_name(device))
    rows: list[dict[str, object]] = []
    for workload in task.spec.workloads:
        row: dict[str, object] = {"task": task.id, "workload": workload.name}
        sets: list[dict[str, object]] = []
        try:
            started = time.perf_counter()
            sets = [inputs.make_inputs(workload.axes, 1000 + k, device) for k in range(INPUT_SETS)]
            row["inputs_s"] = time.perf_counter() - started
            with torch.no_grad():
                plan = TimingPlan(max_time_s=max_time_s)
                stats, _ = time_calls(reference.reference, sets, clocks, device, "events", plan)
                method = choose_mode(task.spec.timing.mode, stats.median_ms)
                if method == "graph":
                    try:
                        stats, _ = time_calls(reference.reference, sets, clocks, device, "graph", plan)
                    except Exception as exc:  # a reference that cannot be captured keeps its events figure
                        method, row["note"] = "events", f"graph capture failed: {type(exc).__name__}"
            row |= {"status": "timed", "reference_ms": stats.median_ms, "method": method, "reps": stats.reps}
            floor = reference_floor_ms(peaks, task, workload) if peaks is not None else None
            row["ref_of_floor"] = floor / stats.median_ms if floor and stats.median_ms else None
        except Exception as exc:
            row |= {"status": "task_error", "message": f"{type(exc).__name__}: {str(exc)[:300]}"}
        rows.append(row)
        del sets
        torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task ids (default: every task of the folder)")
    parser.add_argument("--tasks-dir", type=Path, required=True, help="the catalogue root")
    parser.add_argument("--device", default="cuda", help="cuda or cuda:N")
    parser.add_argument("--max-time", type=float, default=2.0, help="seconds of timing per workload at most")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    folders = [args.tasks_dir / t for t in args.tasks] or sorted(p.parent for p in args.tasks_dir.glob("*/task.toml"))
    for folder in folders:
        task = load_task(folder)
        for row in bench_task(task, device, args.max_time):
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
