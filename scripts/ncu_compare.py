"""Compare the harness's figure for the `bench harness` kernels with Nsight Compute's kernel duration.

Usage (on a GPU machine where `ncu` can read counters): python3 scripts/ncu_compare.py [--calls 20]

For each case it runs `ncu --clock-control none --metrics gpu__time_duration.sum --csv` on a child that
makes `calls` calls of the case (no flush: ncu serialises and replays each kernel itself, with caches
flushed by its default `--cache-control all`), takes the median duration per call (the sum over the call's
kernels), and prints it beside the harness's median from `time_calls` in this process. `--clock-control
none` leaves the clocks as the harness sees them (ncu locks them to base clocks by default).
Exit 2 when ncu is missing or cannot read counters (ERR_NVGPUCTRPERM: counters need admin rights).
"""

from __future__ import annotations

import argparse
import csv
import io
import shutil
import statistics
import subprocess
import sys
import time

CHILD = """
import sys, torch
from workbench.harness.checker.bench import CASES
case = CASES[int(sys.argv[1])]
args = case.make(torch.device("cuda"))
case.fn(**args)
torch.cuda.synchronize()
for _ in range(int(sys.argv[2])):
    case.fn(**args)
torch.cuda.synchronize()
"""


def ncu_ms(ncu: str, index: int, calls: int) -> float:
    done = subprocess.run(
        [
            ncu,
            "--clock-control",
            "none",
            "--metrics",
            "gpu__time_duration.sum",
            "--csv",
            sys.executable,
            "-c",
            CHILD,
            str(index),
            str(calls),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if "ERR_NVGPUCTRPERM" in done.stdout + done.stderr:
        raise SystemExit("ncu cannot read the GPU's counters here (ERR_NVGPUCTRPERM)")
    rows = [
        r
        for r in csv.DictReader(io.StringIO(done.stdout[done.stdout.find('"ID"') :]))
        if r.get("Metric Name") == "gpu__time_duration.sum"
    ]
    if not rows:
        raise SystemExit(f"ncu gave no durations (exit {done.returncode}): {done.stderr[-500:]}")
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}
    per_kernel = [float(r["Metric Value"].replace(",", "")) * scale[r["Metric Unit"]] for r in rows]
    per_call = len(per_kernel) // (calls + 1)  # the first call is the warm-up
    sums = [sum(per_kernel[k * per_call : (k + 1) * per_call]) for k in range(1, calls + 1)]
    return statistics.median(sums)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    options = parser.parse_args()
    ncu = shutil.which("ncu")
    if ncu is None:
        print("ncu (Nsight Compute) is not installed here", file=sys.stderr)
        return 2
    import torch

    from workbench.harness.checker.bench import CASES
    from workbench.harness.solution.timing import Clocks, TimingPlan, time_calls

    clocks = Clocks(time.perf_counter, torch.cuda.Event, torch.cuda.synchronize)
    device = torch.device("cuda")
    print("| kernel | harness ms | ncu ms | harness / ncu |\n| --- | --- | --- | --- |")
    for index, case in enumerate(CASES):
        sets = [case.make(device) for _ in range(3)]
        stats, _ = time_calls(case.fn, sets, clocks, device, "events", TimingPlan(max_time_s=5.0))
        del sets
        reference = ncu_ms(ncu, index, options.calls)
        print(f"| {case.name} | {stats.median_ms:.4f} | {reference:.4f} | {stats.median_ms / reference:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
