"""How close do honest w4a16_gemm designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the x1000-scaled call
the harness makes), scores with the harness's own compare() and the task's tolerance:

* honest: the bfloat16 reference, the expert (tasks/w4a16_gemm/expert.py) and the naive solution
  (tests/solutions/w4a16_gemm_naive.py), both run under the Triton interpreter on the CPU;
* wrong (emulated in float64 torch, exactly the red-team cheats' math): scales and zeros of group
  k // 64 (a group size of 64), zero points ignored (the symmetric default 8 for every group), every
  row computed from row 0 of x (a kernel that handles only M = 1), and GPTQ v1's zero + 1 convention.

Prints, per workload and design, the worst err / bound over the calls (honest must stay below 1, wrong
above it) and the number of failing calls.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/w4a16_gemm_false_failure.py --calls 100
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
from workbench.harness.solution import interpreter_fix  # noqa: E402

GROUP = 128


def wrong(ref: Any, mode: str) -> Callable[..., torch.Tensor]:
    """A float64 emulation of one wrong design (rounded to bfloat16 like a kernel's output)."""

    def fn(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, qzeros: torch.Tensor) -> torch.Tensor:
        K = x.shape[1]
        G = K // GROUP
        q = ref.unpack_nibbles(qweight, 0).double()  # [K, N]
        z = ref.unpack_nibbles(qzeros, 1).double()  # [G, N]
        s = scales.double()
        group = torch.arange(K) // GROUP
        xs = x.double()
        if mode == "group64":
            group = (torch.arange(K) // 64).clamp_max(G - 1)
        if mode == "no_zeros":
            z = torch.full_like(z, 8.0)
        if mode == "zero_plus_one":
            z = z + 1
        if mode == "row0":
            xs = xs[:1].expand_as(xs)
        w = (q - z[group]) * s[group]
        out: torch.Tensor = (xs @ w).to(torch.bfloat16)
        return out

    return fn


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    args = parser.parse_args()
    interpreter_fix.install()  # as the harness's solution process does: exact bf16 tl.dot
    task = Catalog(REPO / "tasks", REPO / "guidance").task("w4a16_gemm")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "w4a16_gemm_naive.py", "_ff_naive")
    designs: dict[str, Callable[..., torch.Tensor]] = {
        "reference": ref.reference,
        "expert": expert.run,
        "naive": naive.run,
        **{f"cheat_{mode}": wrong(ref, mode) for mode in ("group64", "no_zeros", "row0", "zero_plus_one")},
    }
    scale = task.spec.checks.input_scale
    for workload in task.spec.smoke_workloads:
        tol = task.tolerance_for(workload)
        worst = {name: [0.0, float("inf"), 0] for name in designs}  # max ratio, min ratio, failing calls
        start = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            calls = [made]
            if seed % 10 == 0 and scale:  # the harness's scaled call (floating inputs: x and scales)
                calls.append({k: v * scale if v.is_floating_point() else v for k, v in made.items()})
            for call in calls:
                oracle = ref.exact(**call)
                for name, fn in designs.items():
                    out = fn(**{k: v.clone() for k, v in call.items()})
                    res = compare(out, oracle, tol)
                    ratio = res.rel_err / (res.bound or tol.matrix_rel_fro or 1.0)
                    entry = worst[name]
                    entry[0] = max(entry[0], ratio)
                    entry[1] = min(entry[1], ratio)
                    entry[2] += int(ratio > 1)
        print(f"{workload.name} ({args.calls} calls, {time.time() - start:.0f} s): err / bound")
        for name, (hi, lo, failing) in worst.items():
            print(f"  {name:22s} max {hi:9.3g}  min {lo:9.3g}  failing calls {failing}")


if __name__ == "__main__":
    main()
