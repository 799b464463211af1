"""How close do honest rmsnorm_bwd designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the x1000-scaled call
the harness makes), scores with the harness's own compare() and the task's tolerance:

* honest: the fp32 reference, the expert (tasks/rmsnorm_bwd/expert.py) and the naive two-kernel
  solution (tests/solutions/rmsnorm_bwd_naive.py), both run under the Triton interpreter on the CPU;
* wrong (emulated in float64 torch, exactly the red-team cheats' math): dX without the row term, and
  dW from the first quarter of the rows scaled by 4; and an honest design whose dW is reduced or stored
  in bfloat16 (the rule on dW is per output and far tighter than dX's).

Prints, per workload and design, the worst err / bound over the calls (honest must stay below 1, wrong
above it) and the number of failing calls.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/rmsnorm_bwd_false_failure.py --calls 100
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.checker.compare import compare  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402

Outputs = tuple[torch.Tensor, torch.Tensor]


def no_mean_term(dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor) -> Outputs:
    r = rstd.double().unsqueeze(1)
    dW = (dY.double() * X.double() * r).sum(0)
    return (dY.double() * W.double() * r).to(torch.bfloat16), dW.float()


def first_rows(dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor, exact: Any) -> Outputs:
    rows = max(1, X.shape[0] // 4)
    r = rstd.double().unsqueeze(1)
    dW = (dY.double() * X.double() * r)[:rows].sum(0) * (X.shape[0] / rows)
    return exact(dY, X, W, rstd)[0].to(torch.bfloat16), dW.float()


def bf16_dw(dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor, exact: Any) -> Outputs:
    dX, dW = exact(dY, X, W, rstd)
    return dX.to(torch.bfloat16), dW.to(torch.bfloat16).float()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    args = parser.parse_args()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("rmsnorm_bwd")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py", "_ff_naive")
    designs: dict[str, Callable[..., Outputs]] = {
        "reference": ref.reference,
        "expert": expert.run,
        "naive": naive.run,
        "cheat_no_mean_term": no_mean_term,
        "cheat_first_rows": lambda **a: first_rows(**a, exact=ref.exact),
        "wrong_dw_in_bf16": lambda **a: bf16_dw(**a, exact=ref.exact),
    }
    scale = task.spec.checks.input_scale
    for workload in task.spec.smoke_workloads:
        tol = task.tolerance_for(workload)
        worst = {name: [0.0, float("inf"), 0] for name in designs}  # max ratio, min ratio, failing calls
        start = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            calls = [made]
            if seed % 10 == 0 and scale:  # the harness's scaled call, on a tenth of the seeds
                calls.append({k: v * scale for k, v in made.items()})
            for call in calls:
                oracle = ref.exact(**call)
                for name, fn in designs.items():
                    outs = fn(**{k: v.clone() for k, v in call.items()})
                    ratios = []
                    for spec, out, exp in zip(task.spec.signature.outputs, outs, oracle, strict=True):
                        rule = tol.rule_for(spec.name)
                        res = compare(out, exp, rule)
                        ratios.append(res.rel_err / (res.bound or rule.matrix_rel_fro or 1.0))
                    entry = worst[name]
                    entry[0] = max(entry[0], *ratios)
                    entry[1] = min(entry[1], max(ratios))
                    entry[2] += int(max(ratios) > 1)
        print(f"{workload.name} ({args.calls} calls, {time.time() - start:.0f} s): err / bound")
        for name, (hi, lo, failing) in worst.items():
            print(f"  {name:22s} max {hi:9.3g}  min {lo:9.3g}  failing calls {failing}")


if __name__ == "__main__":
    main()
