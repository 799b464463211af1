"""How close do honest splitk_gemm designs come to the tolerance, and how far are wrong ones from it?

Fresh calls per smoke workload (the task's make_inputs, and every tenth call also x1000-scaled as the harness
does), each scored with the harness's compare() and the task's tolerance against exact():

* honest: the bfloat16 reference (torch.matmul: fp32 sums, one rounding) and the expert under the Triton
  interpreter (with the harness's interpreter fix);
* wrong, in float64 torch rounded to bfloat16 as a kernel stores c: the last K split dropped (64-deep splits
  counted with K // 64), the weight read as [K, N], split-K partials written as padded 16-row tiles and read
  unpadded, and three reductions through bfloat16: the partials of 4 K ranges rounded before an fp32 sum,
  the same summed in bfloat16, and a bfloat16 accumulator (the running sum rounded after every 64-deep K step).

Prints per workload and design the worst and best err / bound and the failing calls: honest designs must stay
below 1 on every call, wrong ones above it on every call. Then, with --registered, the bfloat16 designs at the
registered K (M = 16, the first 256 columns of N, a few seeds; float64 emulation).
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/splitk_gemm_false_failure.py --calls 100 --registered
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

SPLIT_DEPTH = 64  # the K-tail design's split depth
ROW_TILE = 16  # the padded-rows design's row tile
SPLITS = 4  # the bfloat16-partials designs' K ranges
K_STEP = 64  # the bfloat16 accumulator's K step

Design = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).double()


def product(a: torch.Tensor, w: torch.Tensor, lo: int = 0, hi: int | None = None) -> torch.Tensor:
    """a[:, lo:hi] @ w[:, lo:hi].T in float64."""
    return a[:, lo:hi].double() @ w[:, lo:hi].double().T


def ranges(K: int, splits: int) -> list[tuple[int, int]]:
    span = -(-K // splits)
    return [(lo, min(K, lo + span)) for lo in range(0, K, span)]


def k_tail_dropped(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return product(a, w, 0, a.shape[1] // SPLIT_DEPTH * SPLIT_DEPTH)


def weight_transposed(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return a.double() @ w.reshape(a.shape[1], w.shape[0]).double()


def tile_rows_past_m(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Two K ranges; the second's partials read shifted by the padding of M to the row tile (zeros first)."""
    M, K = a.shape
    (lo0, hi0), (lo1, hi1) = ranges(K, 2)
    pad = -(-M // ROW_TILE) * ROW_TILE - M
    shifted = torch.cat([torch.zeros((pad, w.shape[0]), dtype=torch.float64), product(a, w, lo1, hi1)])[:M]
    return product(a, w, lo0, hi0) + shifted


def bf16_partials(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return sum(bf16(product(a, w, lo, hi)) for lo, hi in ranges(a.shape[1], SPLITS))


def bf16_partials_bf16_sum(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    acc = torch.zeros((a.shape[0], w.shape[0]), dtype=torch.float64)
    for lo, hi in ranges(a.shape[1], SPLITS):
        acc = bf16(acc + bf16(product(a, w, lo, hi)))
    return acc


def bf16_accumulator(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    acc = torch.zeros((a.shape[0], w.shape[0]), dtype=torch.float64)
    for lo in range(0, a.shape[1], K_STEP):
        acc = bf16(acc + product(a, w, lo, lo + K_STEP))
    return acc


WRONG: dict[str, Design] = {
    "k_tail_dropped": k_tail_dropped,
    "weight_transposed": weight_transposed,
    "tile_rows_past_m": tile_rows_past_m,
    "bf16_partials": bf16_partials,
    "bf16_partials_bf16_sum": bf16_partials_bf16_sum,
    "bf16_accumulator": bf16_accumulator,
}


def stored(design: Design) -> Design:
    """The design's output rounded to bfloat16, as a kernel stores it."""
    return lambda a, w: design(a, w).to(torch.bfloat16)


def registered(task: object, inputs: object, ref: object, seeds: int) -> None:
    """The bfloat16 designs and the reference at the registered K (M = 16, 256 columns), err / bound."""
    bound = task.spec.tolerance.matrix_rel_fro  # type: ignore[attr-defined]
    print(f"registered K (M = 16, N = 256, {seeds} seeds), err / bound:")
    for workload in task.spec.workloads:  # type: ignore[attr-defined]
        K = workload.axes["K"]
        rows: dict[str, list[float]] = {}
        for seed in range(seeds):
            made = inputs.make_inputs({"M": 16, "K": K, "N": 256}, seed, "cpu")  # type: ignore[attr-defined]
            oracle = ref.exact(**made)  # type: ignore[attr-defined]
            for name, design in {"reference": ref.reference, **WRONG}.items():  # type: ignore[attr-defined]
                if name in ("k_tail_dropped", "weight_transposed", "tile_rows_past_m"):
                    continue
                out = design(**made) if name == "reference" else stored(design)(**made)
                rows.setdefault(name, []).append(float((out.double() - oracle).norm() / oracle.norm()) / bound)
        print(f"  K = {K}: " + ", ".join(f"{n} {min(v):.2f}-{max(v):.2f}" for n, v in rows.items()))


def smoke_calls(task: object, inputs: object, workload: object, calls: int) -> list[dict[str, torch.Tensor]]:
    """The harness's kinds of call: ``calls`` fresh seeds, and every tenth one again with the inputs scaled."""
    scale = task.spec.checks.input_scale  # type: ignore[attr-defined]
    made = [inputs.make_inputs(workload.axes, seed, "cpu") for seed in range(calls)]  # type: ignore[attr-defined]
    return made + [{name: value * scale for name, value in d.items()} for d in made[::10]]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    parser.add_argument("--registered", action="store_true", help="also the bfloat16 designs at the registered K")
    args = parser.parse_args()
    interpreter_fix.install()  # as the harness's solution process does: exact bf16 tl.dot, rounded bf16 casts
    task = Catalog(REPO / "tasks", REPO / "guidance").task("splitk_gemm")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    designs: dict[str, Design] = {"reference": ref.reference, "expert": expert.run}
    designs.update((f"wrong_{name}", stored(design)) for name, design in WRONG.items())
    for workload in task.spec.smoke_workloads:
        rule = task.tolerance_for(workload)
        clock = time.time()
        calls = smoke_calls(task, inputs, workload, args.calls)
        table = torch.zeros((len(designs), len(calls)), dtype=torch.float64)  # err / bound per design and call
        for column, call in enumerate(calls):
            oracle = ref.exact(**call)
            for row, design in enumerate(designs.values()):
                verdict = compare(design(**{k: v.clone() for k, v in call.items()}), oracle, rule)
                table[row, column] = verdict.rel_err / (verdict.bound or rule.matrix_rel_fro or 1.0)
        print(f"{workload.name}: {len(calls)} calls in {time.time() - clock:.0f} s, err / bound")
        for name, ratios in zip(designs, table, strict=True):
            worst, best, failing = float(ratios.max()), float(ratios.min()), int((ratios > 1).sum())
            print(f"  {name:30s} max {worst:9.3g}  min {best:9.3g}  failing {failing}")
    if args.registered:
        registered(task, inputs, ref, seeds=5)


if __name__ == "__main__":
    main()
