"""How close do honest causal_attention_bwd designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs; the task makes no scaled
call), scores with the harness's own compare() and the task's tolerance, one rule per output:

* honest: the fp32 autograd reference, the expert (tasks/causal_attention_bwd/expert.py) and the naive
  two-kernel solution (tests/solutions/causal_attention_bwd_naive.py), both run under the Triton
  interpreter on the CPU with the harness's exact bfloat16 tl.dot (workbench/harness/solution/interpreter_fix.py);
* wrong: the red-team cheats (tests/redteam/causal_attention_bwd_cheats/), i.e. the naive kernels with
  one mistake each: delta dropped, the causal mask applied per 32 x 32 block, lse read as base 2, dq
  from the diagonal key block only, and only whole 32-row blocks walked (right wherever 32 divides S).

Prints, per workload and design, the worst err / bound over the calls and outputs (honest must stay
below 1), the smallest such worst (wrong must stay above 1) and the number of failing calls.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/causal_attention_bwd_false_failure.py --calls 100
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

Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]

# cheat -> the naive core's keywords that make the mistake, from the call's q (the cheat files pass exactly these)
CHEATS: dict[str, Callable[[torch.Tensor], dict[str, object]]] = {
    "cheat_no_delta": lambda q: {"use_delta": False},
    "cheat_block_mask": lambda q: {"block_mask": True},
    "cheat_lse_base2": lambda q: {"lse_log2": True},
    "cheat_dq_diagonal_only": lambda q: {"first_key_block": 0},
    "cheat_full_blocks_only": lambda q: {"rows": q.shape[2] - q.shape[2] % 32},  # honest where 32 divides S
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    parser.add_argument("--workloads", nargs="*", default=None, help="smoke workload names (default: all)")
    parser.add_argument("--designs", nargs="*", default=None, help="design names (default: all)")
    args = parser.parse_args()
    interpreter_fix.install()  # as the harness's solution process does: exact bf16 tl.dot
    task = Catalog(REPO / "tasks", REPO / "guidance").task("causal_attention_bwd")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "causal_attention_bwd_naive.py", "_ff_naive")
    designs: dict[str, Callable[..., Outputs]] = {"reference": ref.reference, "expert": expert.run, "naive": naive.run}
    for name, knobs in CHEATS.items():
        designs[name] = lambda knobs=knobs, **a: naive.attention_bwd(**a, **knobs(a["q"]))
    if args.designs:
        designs = {name: fn for name, fn in designs.items() if name in args.designs}
    names = [spec.name for spec in task.spec.signature.outputs]
    for workload in task.spec.smoke_workloads:
        if args.workloads and workload.name not in args.workloads:
            continue
        tol = task.tolerance_for(workload)
        # per design: max ratio, min ratio, failing calls, the output of the max
        worst: dict[str, list[Any]] = {name: [0.0, float("inf"), 0, ""] for name in designs}
        start = time.time()
        for seed in range(args.calls):
            call = inputs.make_inputs(workload.axes, seed, "cpu")
            oracle = ref.exact(**call)
            for name, fn in designs.items():
                outs = fn(**{k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in call.items()})
                ratios = {}
                for out_name, out, exp in zip(names, outs, oracle, strict=True):
                    rule = tol.rule_for(out_name)
                    res = compare(out, exp, rule)
                    ratios[out_name] = res.rel_err / (res.bound or rule.matrix_rel_fro or 1.0)
                entry = worst[name]
                top = max(ratios, key=lambda n: ratios[n])
                if ratios[top] > entry[0]:
                    entry[0], entry[3] = ratios[top], top
                entry[1] = min(entry[1], ratios[top])
                entry[2] += int(ratios[top] > 1)
        print(f"{workload.name} ({args.calls} calls, {time.time() - start:.0f} s): err / bound")
        for name, (hi, lo, failing, where) in worst.items():
            print(f"  {name:24s} max {hi:9.3g} ({where})  min {lo:9.3g}  failing calls {failing}")


if __name__ == "__main__":
    main()
