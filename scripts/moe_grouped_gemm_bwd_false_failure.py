"""How close do honest moe_grouped_gemm_bwd designs come to the tolerance, and how far are wrong ones?

For fresh calls per smoke workload (the task's make_inputs; every tenth call also x1000-scaled, as the
harness does), the worst matrix's err / bound per output (views = "per_token": each token's row of dx, each
expert's dw) with the harness's compare() against exact():

* honest: the reference (bfloat16 per-expert matmuls, fp32 index_add_) and the expert under the interpreter
  (with the harness's interpreter fix);
* wrong (float64 torch, rounded to bfloat16): every group boundary one row late, dx from one slot per token,
  dw without each group's ragged tail (rows past the last whole 16-row chunk), dx for one expert with the
  next expert's w, and an empty expert's dw left holding another expert's dw (stale memory).

Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/moe_grouped_gemm_bwd_false_failure.py --calls 100
"""

from __future__ import annotations

import argparse
import itertools
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
CHUNK = 16


def rounded(outputs: Outputs) -> Outputs:
    return outputs[0].to(torch.bfloat16), outputs[1].to(torch.bfloat16)


def late_bounds(ref: Any, made: dict[str, Any]) -> Outputs:
    offsets = made["offsets"].clone()
    offsets[1:-1] = (offsets[1:-1] + 1).clamp_max(int(offsets[-1]))
    return rounded(ref.exact(**{**made, "offsets": offsets}))


def first_slot_only(ref: Any, made: dict[str, Any]) -> Outputs:
    K = made["dy"].shape[0] // made["x"].shape[0]
    _, dw = ref.exact(**made)
    keep = made["dy"].clone()  # zero every permuted row whose slot is not its token's first
    keep[(made["sorted_slots"].long() % K) != 0] = 0
    dx1, _ = ref.exact(**{**made, "dy": keep})
    return dx1.to(torch.bfloat16), dw.to(torch.bfloat16)


def tail_dropped(ref: Any, made: dict[str, Any]) -> Outputs:
    dx, _ = ref.exact(**made)
    dy = made["dy"].clone()
    bounds = made["offsets"].tolist()
    for lo, hi in itertools.pairwise(bounds):
        dy[lo + (hi - lo) // CHUNK * CHUNK : hi] = 0  # the rows past the last whole chunk
    _, dw = ref.exact(**{**made, "dy": dy})
    return dx.to(torch.bfloat16), dw.to(torch.bfloat16)


def next_expert_w(ref: Any, made: dict[str, Any]) -> Outputs:
    sizes = (made["offsets"][1:] - made["offsets"][:-1]).tolist()
    e = max(range(len(sizes)), key=lambda i: sizes[i])  # the biggest expert's dx rows use the next expert's w
    w = made["w"].clone()
    w[e] = made["w"][(e + 1) % w.shape[0]]
    dx, _ = ref.exact(**{**made, "w": w})
    return dx.to(torch.bfloat16), ref.exact(**made)[1].to(torch.bfloat16)


def stale_empty_dw(ref: Any, made: dict[str, Any]) -> Outputs:
    dx, dw = rounded(ref.exact(**made))
    sizes = made["offsets"][1:] - made["offsets"][:-1]
    empty, full = int((sizes == 0).nonzero()[0]), int(sizes.argmax())
    dw[empty] = dw[full]
    return dx, dw


WRONG: dict[str, Design] = {
    "boundary_off_by_one": late_bounds,
    "dx_first_slot_only": first_slot_only,
    "dw_ragged_tail_dropped": tail_dropped,
    "dx_next_expert_w": next_expert_w,
    "empty_dw_stale": stale_empty_dw,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("moe_grouped_gemm_bwd")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    designs: dict[str, Design] = {"reference": lambda r, m: r.reference(**m), "expert": lambda r, m: expert.run(**m), **WRONG}
    rule = task.spec.tolerance
    bound = rule.matrix_rel_fro or 1.0
    for workload in task.spec.smoke_workloads:
        ratios: dict[tuple[str, str], list[float]] = {(n, o): [] for n in designs for o in ("dx", "dw")}
        started = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            scaled = {k: v * 1000.0 if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in made.items()}
            for call in [made, scaled] if seed % 10 == 0 else [made]:
                want = ref.per_token(dict(zip(("dx", "dw"), ref.exact(**call), strict=True)), call)
                for name, design in designs.items():
                    got = ref.per_token(dict(zip(("dx", "dw"), design(ref, call), strict=True)), call)
                    for out in ("dx", "dw"):
                        result = compare(got[out], want[out], rule)
                        ratios[(name, out)].append(result.rel_err / (result.bound or bound))
        print(
            f"{workload.name}: {len(ratios[('expert', 'dx')])} calls in {time.time() - started:.0f} s, worst matrix err / bound"
        )
        for (name, out), values in ratios.items():
            print(f"  {name:24s} {out}  max {max(values):9.3g}  min {min(values):9.3g}  failing {sum(v > 1 for v in values)}")


if __name__ == "__main__":
    main()
