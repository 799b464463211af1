"""How close do honest chunked_gla designs come to the tolerance, and how far are wrong ones?

For fresh calls per workload (the task's make_inputs; every tenth call also x1000-scaled, as the harness
does), the worst compared matrix's err / bound (views = "steps": 16-step blocks of o, the final state per
head) with the harness's compare() against exact():

* honest: the reference (fp32 chunked loop); a chunked emulation with the expert's arithmetic (float64 with
  the product operands rounded to bfloat16: the decayed scores, q exp(G), the state slice, k exp(G_last - G);
  an fp32-exact state); on the smoke workloads also the expert and the naive solution under the interpreter
  (with the harness's interpreter fix; fewer calls, the interpreter is slow);
* wrong (float64, o rounded to bfloat16): the state not passed between chunks, the decay applied once per
  chunk, the diagonal excluded from the intra-chunk mask, future steps let into the chunk, the chunk-local
  cumulative gate accumulated in bfloat16;
* numerically weaker: the expert's arithmetic with the state carried in bfloat16 between chunks.

The reference and the emulations also run on mid-sized shapes (D 64-128, T 1024-2048, 8-16 heads: the
registered shapes' spread of decays), and the two emulations on one long sequence (T = 32768, D 64), where
a bfloat16 state drifts.

Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/chunked_gla_false_failure.py --calls 50 --kernel-calls 10
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

Outputs = tuple[torch.Tensor, torch.Tensor]
Design = Callable[[Any, dict[str, Any]], Outputs]
CHUNK = 64
MID_SHAPES = {
    "mid_b1_h16_t1024_d128": {"B": 1, "H": 16, "T": 1024, "D": 128},
    "mid_b1_h8_t2048_d64": {"B": 1, "H": 8, "T": 2048, "D": 64},
}
LONG_SHAPES = {"long_b1_h4_t32768_d64": {"B": 1, "H": 4, "T": 32768, "D": 64}}


def bf(x: torch.Tensor) -> torch.Tensor:
    """``x`` rounded to bfloat16 (to nearest even), back in float64."""
    return x.to(torch.bfloat16).double()


def emulate(made: dict[str, Any], mode: str) -> Outputs:
    """The chunked form in float64 with ``mode``'s arithmetic or mistake; ``o`` rounded to bfloat16.

    ``honest_bf16``: the expert's roundings (operands of the products in bfloat16, the state exact);
    ``bf16_state``: the same with the carried state rounded to bfloat16 after every chunk; ``no_state``:
    every chunk from a zero state; ``decay_once``: no decay inside a chunk, the carried state multiplied by
    the chunk's total decay; ``diagonal_excluded``: the mask j < i; ``future``: no mask inside the chunk;
    ``bf16_cumsum``: G accumulated step by step in bfloat16 from bfloat16 gates.
    """
    q, k, v, g = (made[n].double() for n in ("q", "k", "v", "g"))
    B, H, T, D = q.shape
    scale = D**-0.5
    state = torch.zeros((B, H, D, D), dtype=torch.float64)
    o = torch.empty((B, H, T, D), dtype=torch.float64)
    rounded = mode in ("honest_bf16", "bf16_state")
    for c0 in range(0, T, CHUNK):
        c1 = min(T, c0 + CHUNK)
        L = c1 - c0
        qc, kc, vc, gc = q[:, :, c0:c1], k[:, :, c0:c1], v[:, :, c0:c1], g[:, :, c0:c1]
        if mode == "bf16_cumsum":
            G = torch.empty_like(gc)
            running = torch.zeros((B, H), dtype=torch.bfloat16)
            for i in range(L):
                running = (running.double() + bf(gc[..., i])).to(torch.bfloat16)
                G[..., i] = running.double()
        else:
            G = gc.cumsum(-1)
        if mode == "no_state":
            state = torch.zeros_like(state)
        mask = torch.ones((L, L), dtype=torch.bool).tril(-1 if mode == "diagonal_excluded" else 0)
        if mode == "future":
            mask = torch.ones((L, L), dtype=torch.bool)
        if mode == "decay_once":
            decay, q_decayed = mask.double(), qc
        else:
            decay = (G[..., :, None] - G[..., None, :]).masked_fill(~mask, float("-inf")).exp()
            q_decayed = qc * G.exp()[..., None]
        scores = (qc @ kc.transpose(-1, -2)) * decay
        if rounded:
            o[:, :, c0:c1] = scale * (bf(scores) @ vc + bf(q_decayed) @ bf(state))
        else:
            o[:, :, c0:c1] = scale * (scores @ vc + q_decayed @ state)
        last = G[..., -1:]
        k_decayed = kc if mode == "decay_once" else kc * (last - G).exp()[..., None]
        state = state * last.exp()[..., None] + (bf(k_decayed) if rounded else k_decayed).transpose(-1, -2) @ vc
        if mode == "bf16_state":
            state = bf(state)
    return o.to(torch.bfloat16), state.float()


def emulated(mode: str) -> Design:
    return lambda ref, made: emulate(made, mode)


HONEST_EMULATIONS: dict[str, Design] = {"expert_arithmetic": emulated("honest_bf16"), "bf16_state": emulated("bf16_state")}
WRONG: dict[str, Design] = {
    "state_not_passed": emulated("no_state"),
    "decay_once_per_chunk": emulated("decay_once"),
    "diagonal_excluded": emulated("diagonal_excluded"),
    "future_steps_in_chunk": emulated("future"),
    "gate_cumsum_in_bf16": emulated("bf16_cumsum"),
}

Ratios = dict[str, dict[bool, list[float]]]  # design -> scaled call? -> worst matrix's err / bound per call


def worst_ratio(ref: Any, rule: Any, outputs: Outputs, want: Outputs, made: dict[str, Any]) -> float:
    """The largest err / bound over the compared views (o's blocks and the final states)."""
    got = ref.steps({"o": outputs[0], "final_state": outputs[1]}, made)
    exact = ref.steps({"o": want[0], "final_state": want[1]}, made)
    worst = 0.0
    for name in ("o", "final_state"):
        result = compare(got[name], exact[name], rule)
        worst = max(worst, result.rel_err / (result.bound or rule.matrix_rel_fro or 1.0))
    return worst


def measure(task: Any, ref: Any, inputs: Any, designs: dict[str, Design], axes: dict[str, int], calls: int) -> Ratios:
    """The worst matrix's err / bound of every design on `calls` fresh calls (and a scaled one every tenth)."""
    rule = task.spec.tolerance
    ratios: Ratios = {name: {False: [], True: []} for name in designs}
    for seed in range(calls):
        made = inputs.make_inputs(axes, seed, "cpu")
        scaled = {k: v * 1000.0 if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in made.items()}
        for is_scaled, call in [(False, made), (True, scaled)] if seed % 10 == 0 else [(False, made)]:
            want = ref.exact(**call)
            for name, design in designs.items():
                ratios[name][is_scaled].append(worst_ratio(ref, rule, design(ref, call), want, call))
    return ratios


def show(name: str, ratios: Ratios, seconds: float) -> None:
    print(f"{name}: {seconds:.0f} s, worst matrix err / bound per call (fresh calls; x1000-scaled calls)")
    for design, split in ratios.items():
        line = f"  {design:22s}"
        for label, values in (("fresh", split[False]), ("scaled", split[True])):
            if values:
                failing = sum(v > 1 for v in values)
                line += f"  {label} {len(values):4d}: {min(values):8.3g} - {max(values):8.3g}, failing {failing:4d}"
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="fresh calls per smoke workload (reference, emulations)")
    parser.add_argument("--kernel-calls", type=int, default=10, help="fresh calls per smoke workload (expert, naive)")
    parser.add_argument("--mid-calls", type=int, default=10, help="fresh calls per mid-sized shape")
    parser.add_argument("--long-calls", type=int, default=1, help="fresh calls on the long sequence (0: skip it)")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("chunked_gla")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "chunked_gla_naive.py", "_ff_naive")
    torch_designs: dict[str, Design] = {"reference": lambda r, m: r.reference(**m), **HONEST_EMULATIONS, **WRONG}
    kernels: dict[str, Design] = {"expert": lambda r, m: expert.run(**m), "naive": lambda r, m: naive.run(**m)}
    for workload in task.spec.smoke_workloads:
        started = time.time()
        ratios = measure(task, ref, inputs, torch_designs, dict(workload.axes), args.calls)
        ratios.update(measure(task, ref, inputs, kernels, dict(workload.axes), args.kernel_calls))
        show(workload.name, ratios, time.time() - started)
    for name, axes in MID_SHAPES.items():
        started = time.time()
        show(name, measure(task, ref, inputs, torch_designs, axes, args.mid_calls), time.time() - started)
    if args.long_calls:
        long_designs: dict[str, Design] = {"reference": lambda r, m: r.reference(**m), **HONEST_EMULATIONS}
        for name, axes in LONG_SHAPES.items():
            started = time.time()
            show(name, measure(task, ref, inputs, long_designs, axes, args.long_calls), time.time() - started)


if __name__ == "__main__":
    main()
