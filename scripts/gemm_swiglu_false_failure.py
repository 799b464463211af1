"""How close do honest gemm_swiglu designs come to the tolerance, and how far are wrong ones from it?

Fresh calls per smoke workload (the task's make_inputs, and every tenth call also x1000-scaled as the
harness does), each scored with the harness's compare() and the task's tolerance against exact():

* honest: the bfloat16 reference (cuBLAS-style: g and u rounded, then silu, then the product) and the
  expert under the Triton interpreter (with the harness's exact bf16 tl.dot);
* wrong, in float64 torch rounded to bfloat16 like a kernel's output: the halves swapped (silu(u) * g),
  GELU instead of SiLU, the sigmoid alone (sigmoid(g) * u), the up projection dropped (silu(g) * g),
  the last K tile dropped (a K loop without its tail), and a bfloat16 accumulator (the running sums
  rounded to bfloat16 after every 32-deep K step).

Prints per workload and design the worst and best err / bound and the failing calls: honest designs
must stay below 1 on every call, wrong ones above it on every call.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/gemm_swiglu_false_failure.py --calls 100
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
import torch.nn.functional as F  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.checker.compare import compare  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402
from workbench.harness.solution import interpreter_fix  # noqa: E402

K_STEP = 32  # the depth of one K step of the bfloat16-accumulator design


def halves(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(g, u) in float64."""
    h = x.double() @ w.double().T
    inter = w.shape[0] // 2
    return h[:, :inter], h[:, inter:]


def bf16_accumulated(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(g, u) summed in K steps of K_STEP with the running sums rounded to bfloat16 after each."""
    acc = torch.zeros((x.shape[0], w.shape[0]), dtype=torch.float64)
    for k0 in range(0, x.shape[1], K_STEP):
        acc = (acc + x[:, k0 : k0 + K_STEP].double() @ w[:, k0 : k0 + K_STEP].double().T).to(torch.bfloat16).double()
    inter = w.shape[0] // 2
    return acc[:, :inter], acc[:, inter:]


Halves = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
Activation = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def tail_dropped(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(g, u) without the last, partial K tile."""
    kept = (x.shape[1] - 1) // K_STEP * K_STEP
    return halves(x[:, :kept], w[:, :kept])


# name -> (how g and u are computed, the activation applied to them)
WRONG: dict[str, tuple[Halves, Activation]] = {
    "swapped_halves": (halves, lambda g, u: F.silu(u) * g),
    "gelu": (halves, lambda g, u: F.gelu(g) * u),
    "sigmoid_only": (halves, lambda g, u: torch.sigmoid(g) * u),
    "up_dropped": (halves, lambda g, u: F.silu(g) * g),
    "k_tail_dropped": (tail_dropped, lambda g, u: F.silu(g) * u),
    "bf16_accumulator": (bf16_accumulated, lambda g, u: F.silu(g) * u),
}


def wrong_design(products: Halves, activation: Activation) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The design's output rounded to bfloat16, as a kernel stores it."""
    return lambda x, w: activation(*products(x, w)).to(torch.bfloat16)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    args = parser.parse_args()
    interpreter_fix.install()  # as the harness's solution process does: exact bf16 tl.dot
    task = Catalog(REPO / "tasks", REPO / "guidance").task("gemm_swiglu")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    designs = {"reference": ref.reference, "expert": expert.run}
    designs |= {f"wrong_{name}": wrong_design(*parts) for name, parts in WRONG.items()}
    for workload in task.spec.smoke_workloads:
        tol = task.tolerance_for(workload)
        ratios: dict[str, list[float]] = {name: [] for name in designs}
        started = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            scaled = [{k: v * task.spec.checks.input_scale for k, v in made.items()}] if seed % 10 == 0 else []
            for call in [made, *scaled]:
                oracle = ref.exact(**call)
                for name, design in designs.items():
                    result = compare(design(**{k: v.clone() for k, v in call.items()}), oracle, tol)
                    ratios[name].append(result.rel_err / (result.bound or tol.matrix_rel_fro or 1.0))
        print(f"{workload.name}: {len(ratios['expert'])} calls in {time.time() - started:.0f} s, err / bound")
        for name, values in ratios.items():
            print(f"  {name:24s} max {max(values):9.3g}  min {min(values):9.3g}  failing {sum(v > 1 for v in values)}")


if __name__ == "__main__":
    main()
