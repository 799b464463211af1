"""How close do honest multi_lora designs come to the per-token tolerance, and how far are wrong ones?

For fresh calls per smoke workload (the task's make_inputs; every tenth call also x1000-scaled, as the
harness does), the worst token's err / bound (views = "rows") with the harness's compare() against exact():

* honest: the reference (bfloat16 shrink and expand, rounded at each step) and the expert under the
  interpreter (with the harness's interpreter fix);
* wrong (float64 torch, rounded to bfloat16): one request served with the next adapter, the scaling dropped,
  requests without an adapter served with adapter 0, and the shrink's rank truncated to its first half.

Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/multi_lora_false_failure.py --calls 100
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


def altered(ref: Any, made: dict[str, Any], **changes: Any) -> torch.Tensor:
    """exact() on the inputs with some of them replaced, rounded to bfloat16 as a kernel stores y."""
    out: torch.Tensor = ref.exact(**{**made, **changes}).to(torch.bfloat16)
    return out


def next_adapter(ref: Any, made: dict[str, Any]) -> torch.Tensor:
    adapters = made["seg_adapters"].clone()
    used = (adapters >= 0).nonzero().flatten()
    adapters[used[0]] = (adapters[used[0]] + 1) % made["lora_a"].shape[1]
    return altered(ref, made, seg_adapters=adapters)


def half_rank(ref: Any, made: dict[str, Any]) -> torch.Tensor:
    half = made["lora_a"].clone()
    half[:, :, half.shape[2] // 2 :] = 0
    return altered(ref, made, lora_a=half)


WRONG: dict[str, Design] = {
    "one_request_next_adapter": next_adapter,
    "scaling_dropped": lambda ref, made: altered(ref, made, scaling=1.0),
    "no_adapter_as_zero": lambda ref, made: altered(ref, made, seg_adapters=made["seg_adapters"].clamp_min(0)),
    "shrink_rank_halved": half_rank,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("multi_lora")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    designs: dict[str, Design] = {"reference": lambda r, m: r.reference(**m), "expert": lambda r, m: expert.run(**m), **WRONG}
    rule = task.spec.tolerance
    for workload in task.spec.smoke_workloads:
        ratios: dict[str, list[float]] = {name: [] for name in designs}
        started = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            scaled = {k: v * 1000.0 if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in made.items()}
            for call in [made, scaled] if seed % 10 == 0 else [made]:
                want = ref.rows({"y": ref.exact(**call)}, call)["y"]
                for name, design in designs.items():
                    result = compare(ref.rows({"y": design(ref, call)}, call)["y"], want, rule)
                    ratios[name].append(result.rel_err / (result.bound or rule.matrix_rel_fro or 1.0))
        print(f"{workload.name}: {len(ratios['expert'])} calls in {time.time() - started:.0f} s, worst token err / bound")
        for name, values in ratios.items():
            print(f"  {name:26s} max {max(values):8.3g}  min {min(values):8.3g}  failing {sum(v > 1 for v in values)}")


if __name__ == "__main__":
    main()
