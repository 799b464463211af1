"""How close do honest fused_moe_forward designs come to the per-token tolerance, and how far are wrong ones?

For fresh calls per workload (the task's make_inputs; every tenth call also x1000-scaled, as the harness
does), the worst token's err / bound (views = "rows") with the harness's compare() against exact():

* honest: the reference (Hugging Face's loop over experts: bfloat16 matmuls, bfloat16 routing weights and a
  bfloat16 index_add_), and the expert and the naive solution under the interpreter (with the harness's
  interpreter fix; on the smoke workloads, fewer calls since the interpreter is slow);
* wrong (float64 torch, rounded to bfloat16): the top-K weights not renormalised, every token's K-th choice
  dropped, SiLU applied to the up half instead of the gate half, and the tokens of the busiest expert dropped.

The reference alone also runs on two mid-sized shapes (H 1024-2048) whose per-token rows average more
roundings, as the registered shapes do.

Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/fused_moe_forward_false_failure.py --calls 200 --kernel-calls 20
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

Design = Callable[[Any, dict[str, Any]], torch.Tensor]
MID_SHAPES = {
    "mid_t64_e16_k4_h1024_i384": {"T": 64, "E": 16, "K": 4, "H": 1024, "I": 384},
    "mid_t32_e32_k8_h2048_i768": {"T": 32, "E": 32, "K": 8, "H": 2048, "I": 768},
}


def moe64(made: dict[str, Any], weights: torch.Tensor, ids: torch.Tensor, swap: bool = False) -> torch.Tensor:
    """sum_j weights[t, j] * expert_{ids[t, j]}(hidden[t]) in float64, rounded to bfloat16 (a kernel's store).
    `swap`: SiLU applied to the up half and multiplied by the gate half."""
    x = made["hidden"].double()
    inter = made["w2"].shape[2]
    out = torch.zeros_like(x)
    for e in torch.unique(ids).tolist():
        token, slot = torch.where(ids == e)
        gate, up = (x[token] @ made["w13"][e].double().T).split(inter, dim=1)
        act = torch.nn.functional.silu(up) * gate if swap else torch.nn.functional.silu(gate) * up
        out.index_add_(0, token, (act @ made["w2"][e].double().T) * weights[token, slot, None])
    return out.to(torch.bfloat16)


def routing(made: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(full softmax probabilities of the chosen experts, renormalised weights, ids), float64."""
    logits = made["router_logits"].double()
    probs = torch.softmax(logits, dim=-1)
    chosen, ids = torch.topk(logits, made["top_k"], dim=-1)
    return probs.gather(1, ids), torch.softmax(chosen, dim=-1), ids


def not_renormalised(ref: Any, made: dict[str, Any]) -> torch.Tensor:
    probs, _, ids = routing(made)
    return moe64(made, probs, ids)


def kth_dropped(ref: Any, made: dict[str, Any]) -> torch.Tensor:
    _, weights, ids = routing(made)
    weights = weights.clone()
    weights[:, -1] = 0
    return moe64(made, weights, ids)


def silu_on_up(ref: Any, made: dict[str, Any]) -> torch.Tensor:
    _, weights, ids = routing(made)
    return moe64(made, weights, ids, swap=True)


def busiest_dropped(ref: Any, made: dict[str, Any]) -> torch.Tensor:
    _, weights, ids = routing(made)
    busiest = int(torch.bincount(ids.flatten()).argmax())
    return moe64(made, torch.where(ids == busiest, 0.0, weights), ids)


WRONG: dict[str, Design] = {
    "weights_not_renormalised": not_renormalised,
    "kth_choice_dropped": kth_dropped,
    "silu_on_up_half": silu_on_up,
    "busiest_expert_dropped": busiest_dropped,
}


Ratios = dict[str, dict[bool, list[float]]]  # design -> scaled call? -> worst token's err / bound per call


def measure(task: Any, ref: Any, inputs: Any, designs: dict[str, Design], axes: dict[str, int], calls: int) -> Ratios:
    """The worst token's err / bound of every design on `calls` fresh calls (and a scaled one every tenth)."""
    rule = task.spec.tolerance
    ratios: Ratios = {name: {False: [], True: []} for name in designs}
    for seed in range(calls):
        made = inputs.make_inputs(axes, seed, "cpu")
        scaled = {k: v * 1000.0 if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in made.items()}
        for is_scaled, call in [(False, made), (True, scaled)] if seed % 10 == 0 else [(False, made)]:
            want = ref.rows({"out": ref.exact(**call)}, call)["out"]
            for name, design in designs.items():
                result = compare(ref.rows({"out": design(ref, call)}, call)["out"], want, rule)
                ratios[name][is_scaled].append(result.rel_err / (result.bound or rule.matrix_rel_fro or 1.0))
    return ratios


def show(name: str, ratios: Ratios, seconds: float) -> None:
    print(f"{name}: {seconds:.0f} s, worst token err / bound per call (fresh calls; x1000-scaled calls)")
    for design, split in ratios.items():
        line = f"  {design:26s}"
        for label, values in (("fresh", split[False]), ("scaled", split[True])):
            if values:
                failing = sum(v > 1 for v in values)
                line += f"  {label} {len(values):4d}: {min(values):7.3g} - {max(values):7.3g}, failing {failing:4d}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="fresh calls per workload (reference, wrong designs)")
    parser.add_argument("--kernel-calls", type=int, default=20, help="fresh calls per smoke workload (expert, naive)")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("fused_moe_forward")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "fused_moe_forward_naive.py", "_ff_naive")
    torch_designs: dict[str, Design] = {"reference": lambda r, m: r.reference(**m), **WRONG}
    kernels: dict[str, Design] = {"expert": lambda r, m: expert.run(**m), "naive": lambda r, m: naive.run(**m)}
    shapes = {w.name: dict(w.axes) for w in task.spec.smoke_workloads}
    for name, axes in shapes.items():
        started = time.time()
        ratios = measure(task, ref, inputs, torch_designs, axes, args.calls)
        ratios.update(measure(task, ref, inputs, kernels, axes, args.kernel_calls))
        show(name, ratios, time.time() - started)
    for name, axes in MID_SHAPES.items():
        started = time.time()
        show(name, measure(task, ref, inputs, torch_designs, axes, max(1, args.calls // 10)), time.time() - started)


if __name__ == "__main__":
    main()
