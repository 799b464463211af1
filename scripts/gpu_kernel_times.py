"""GPU kernel breakdown of any task's expert: per registered workload, the device time of each kernel the
expert launches (torch.profiler, CUDA activity, summed over the timed calls) beside the whole call's median
(the harness's timer, as `bench sweep` uses it: CUDA events, L2 flushed, launch cover). It says which pass of a
multi-kernel expert to work on.

Run from the repository root on the GPU machine:
    PYTHONPATH=$PWD python3 scripts/gpu_kernel_times.py TASK [WORKLOAD ...] [--calls N] [--solution FILE]
(default: every registered workload, 10 profiled calls, tasks/TASK/expert.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tomllib
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import torch
from torch.profiler import ProfilerActivity, profile

from workbench.harness.studies.sweep import Timer


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it is being defined
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task")
    parser.add_argument("workloads", nargs="*")
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--solution", type=Path)
    args = parser.parse_args()
    folder = Path("tasks") / args.task
    if not (folder / "task.toml").is_file():
        raise SystemExit(f"no task {args.task!r} under tasks/")
    spec = tomllib.loads((folder / "task.toml").read_text())
    known = [w["name"] for w in spec["workloads"]]
    unknown = sorted(set(args.workloads) - set(known))
    if unknown:
        raise SystemExit(f"unknown workloads {unknown}; registered: {known}")
    inputs = load(folder / "inputs.py", f"kt_{args.task}_inputs")
    solution = load(args.solution or folder / "expert.py", f"kt_{args.task}_solution")
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}")
    timer = Timer(torch.device("cuda"))
    for workload in spec["workloads"]:
        if args.workloads and workload["name"] not in args.workloads:
            continue
        made = inputs.make_inputs(workload["axes"], 11, "cuda")
        whole = timer.median_ms(solution.run, made)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.calls):
                solution.run(**made)
            torch.cuda.synchronize()
        per_kernel: dict[str, list[float]] = defaultdict(list)
        for event in prof.events():
            if event.device_type == torch.autograd.DeviceType.CUDA:
                per_kernel[event.name].append(event.device_time / 1e3)  # us -> ms
        total = sum(sum(times) for times in per_kernel.values()) / args.calls
        print(f"\n{workload['name']} {workload['axes']}: whole call {whole:.4f} ms (events, L2 flushed);"
              f" kernels {total:.4f} ms a call (profiler, L2 warm)")  # fmt: skip
        for name, times in sorted(per_kernel.items(), key=lambda item: -sum(item[1])):
            each = sum(times) / args.calls
            print(f"   {each:9.4f} ms  {100 * each / total:5.1f}%  x{len(times) // args.calls:<3d} {name[:90]}")
        del made
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
