"""How often would an honest Muon design fail the smoke-workload rule by numerical noise alone?

Runs the torch emulation of the expert's square-side design (the least accurate honest design measured
in docs/tolerance-muon.md) and the float16 reference on many fresh smoke calls drawn by the task's
make_inputs, and scores each call with the harness's own compare() and the task's smoke tolerance.
Usage: .venv/bin/python scripts/muon_false_failure.py --calls 2000
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from muon_tolerance_study import square_side  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.checker.compare import compare  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per smoke workload")
    parser.add_argument("--workload", action="append", help="only these smoke workloads")
    args = parser.parse_args()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    for workload in task.spec.smoke_workloads:
        if args.workload and workload.name not in args.workload:
            continue
        tol = task.tolerance_for(workload)
        ratios, failures, started = [], 0, time.time()
        for call in range(args.calls):
            G = inputs.make_inputs(workload.axes, 10_000_000 + call, "cpu")["G"]
            result = compare(square_side(G, 5), ref.exact(G, 5), tol, ref.reference(G, 5))
            ratios.append(result.rel_err / result.bound if result.bound else 0.0)
            failures += not result.ok
        # Tail estimate: a normal fit to log(err/bound) over all calls, P(log ratio > 0).
        logs = [math.log(r) for r in ratios if r > 0]
        mu, sigma = statistics.fmean(logs), statistics.stdev(logs)
        p_call = 0.5 * math.erfc((0 - mu) / (sigma * math.sqrt(2)))
        q = statistics.quantiles(ratios, n=1000)
        print(
            f"{workload.name}: {args.calls} calls, {failures} failures, err/bound median {statistics.median(ratios):.3f} "
            f"p99.9 {q[-1]:.3f} max {max(ratios):.3f}; log-normal tail P(fail per call) {p_call:.1e}; "
            f"{time.time() - started:.0f} s"
        )


if __name__ == "__main__":
    main()
