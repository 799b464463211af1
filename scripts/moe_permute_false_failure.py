"""How close do honest moe_permute designs come to combined's tolerance, and how far are wrong ones?

permuted and offsets are held exact, so only combined has a margin. For fresh calls per smoke workload (the
task's make_inputs; every tenth call also x1000-scaled, as the harness does), combined's err / bound with the
harness's compare() against exact():

* honest: the reference (fp32 index_add_, one cast), the expert (and with --naive the naive solution) under
  the interpreter with the harness's interpreter fix, and a design that adds the K rows in bfloat16 (rounding
  after each);
* wrong (float64 torch, rounded to bfloat16): each slot with its token's next weight, the weights ignored
  (a plain sum of the K rows), the last slot of each token dropped, and the rows taken at the slot's own
  index instead of its permuted position.

Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/moe_permute_false_failure.py --calls 100
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
from workbench.harness.solution import interpreter_fix  # noqa: E402

Rows = Callable[[dict[str, torch.Tensor]], torch.Tensor]


def slot_rows(made: dict[str, torch.Tensor], own_index: bool = False) -> torch.Tensor:
    """[T, K, H] float64: each slot's row of expert_out (at its permuted position, or at its own index)."""
    T, K = made["topk_ids"].shape
    order = torch.argsort(made["topk_ids"].flatten(), stable=True)
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel())
    index = torch.arange(order.numel()) if own_index else position
    return made["expert_out"].double().index_select(0, index).view(T, K, -1)


def weighted(made: dict[str, torch.Tensor], weights: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    return (rows * weights.double()[:, :, None]).sum(dim=1).to(torch.bfloat16)


def bf16_sum(made: dict[str, torch.Tensor]) -> torch.Tensor:
    rows, w = slot_rows(made), made["topk_weights"].double()
    acc = torch.zeros(rows.shape[0], rows.shape[2], dtype=torch.bfloat16)
    for j in range(rows.shape[1]):
        acc = (acc.double() + w[:, j, None] * rows[:, j]).to(torch.bfloat16)
    return acc


DESIGNS: dict[str, Rows] = {
    "bf16_running_sum (honest)": bf16_sum,
    "wrong_shifted_weights": lambda m: weighted(m, m["topk_weights"].roll(1, dims=1), slot_rows(m)),
    "wrong_weights_ignored": lambda m: weighted(m, torch.ones_like(m["topk_weights"]), slot_rows(m)),
    "wrong_last_slot_dropped": lambda m: weighted(m, m["topk_weights"][:, :-1], slot_rows(m)[:, :-1]),
    "wrong_unpermuted_rows": lambda m: weighted(m, m["topk_weights"], slot_rows(m, own_index=True)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    parser.add_argument("--naive", action="store_true", help="also the naive solution (quadratic: slow under the interpreter)")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("moe_permute")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    solutions = {"reference": ref.reference, "expert": import_file(task.file("expert.py"), "_ff_expert").run}
    if args.naive:
        solutions["naive"] = import_file(REPO / "tests" / "solutions" / "moe_permute_naive.py", "_ff_naive").run
    rule = task.spec.tolerance
    scale = task.spec.checks.input_scale
    for workload in task.spec.smoke_workloads:
        ratios: dict[str, list[float]] = {name: [] for name in [*solutions, *DESIGNS]}
        started = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            scaled = {k: v * scale if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in made.items()}
            for call in [made, scaled] if seed % 10 == 0 else [made]:
                oracle = ref.exact(**call)[2]
                outputs = {name: fn(**call)[2] for name, fn in solutions.items()}
                outputs |= {name: design(call) for name, design in DESIGNS.items()}
                for name, out in outputs.items():
                    result = compare(out, oracle, rule)
                    ratios[name].append(result.rel_err / (result.bound or rule.matrix_rel_fro or 1.0))
        print(f"{workload.name}: {len(ratios['expert'])} calls in {time.time() - started:.0f} s, combined err / bound")
        for name, values in ratios.items():
            print(f"  {name:28s} max {max(values):8.3g}  min {min(values):8.3g}  failing {sum(v > 1 for v in values)}")


if __name__ == "__main__":
    main()
