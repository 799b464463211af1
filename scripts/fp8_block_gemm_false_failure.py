"""How close do honest fp8_block_gemm designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the x1000-scaled call
the harness makes: the float32 scales grow, the FP8 data keeps its values), scores with the harness's own
compare() and the task's tolerance:

* honest: the bf16-dequantising reference, the expert (tasks/fp8_block_gemm/expert.py) and the naive
  dequantise-in-registers solution (tests/solutions/fp8_block_gemm_naive.py), both run under the Triton
  interpreter on the CPU;
* wrong (emulated in float64 torch, exactly the red-team cheats' math): the first K block's scales reused
  for every K block, the first weight-block row's scale used for every N block, and an odd last K block
  dropped.

Prints, per workload and design, the worst err / bound over the calls (honest must stay below 1, wrong
above it) and the number of failing calls.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/fp8_block_gemm_false_failure.py --calls 100
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.checker.compare import compare  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402


def emulated(
    A: torch.Tensor, As: torch.Tensor, B: torch.Tensor, Bs: torch.Tensor, *, k_step: int, n_step: int, k_blocks: int
) -> torch.Tensor:
    """The naive core's gemm(k_blocks, k_scale_step, n_scale_step) in float64, rounded to bfloat16."""
    M, N = A.shape[0], B.shape[0]
    C = torch.zeros((M, N), dtype=torch.float64)
    for j in range(k_blocks):
        a = A[:, 128 * j : 128 * j + 128].double() * As[:, j * k_step].double().unsqueeze(1)
        sb = Bs[torch.arange(N) // 128 * n_step, j * k_step].double()
        b = B[:, 128 * j : 128 * j + 128].double() * sb.unsqueeze(1)
        C += a @ b.T
    return C.to(torch.bfloat16)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    args = parser.parse_args()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("fp8_block_gemm")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "fp8_block_gemm_naive.py", "_ff_naive")
    designs: dict[str, Callable[..., torch.Tensor]] = {
        "reference": ref.reference,
        "expert": expert.run,
        "naive": naive.run,
        "cheat_first_k_scale": lambda **a: emulated(**a, k_step=0, n_step=1, k_blocks=a["A"].shape[1] // 128),
        "cheat_first_n_block_scale": lambda **a: emulated(**a, k_step=1, n_step=0, k_blocks=a["A"].shape[1] // 128),
        "cheat_even_k_blocks": lambda **a: emulated(**a, k_step=1, n_step=1, k_blocks=a["A"].shape[1] // 256 * 2),
    }
    scale = task.spec.checks.input_scale
    for workload in task.spec.smoke_workloads:
        tol = task.tolerance_for(workload)
        rule = tol.rule_for("C")
        worst = {name: [0.0, float("inf"), 0] for name in designs}  # max ratio, min ratio, failing calls
        start = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            calls = [made]
            if seed % 10 == 0 and scale:  # the harness's scaled call (floats of 16+ bits), on a tenth of the seeds
                calls.append({k: v * scale if v.element_size() >= 2 else v for k, v in made.items()})
            for call in calls:
                oracle = ref.exact(**call)
                for name, fn in designs.items():
                    out = fn(**{k: v.clone() for k, v in call.items()})
                    res = compare(out, oracle, rule)
                    ratio = res.rel_err / (res.bound or rule.matrix_rel_fro or 1.0)
                    entry = worst[name]
                    entry[0] = max(entry[0], ratio)
                    entry[1] = min(entry[1], ratio)
                    entry[2] += int(ratio > 1)
        print(f"{workload.name} ({args.calls} calls, {time.time() - start:.0f} s): err / bound")
        for name, (hi, lo, failing) in worst.items():
            print(f"  {name:26s} max {hi:9.3g}  min {lo:9.3g}  failing calls {failing}")


if __name__ == "__main__":
    main()
