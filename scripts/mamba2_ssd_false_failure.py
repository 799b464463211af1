"""How close do honest mamba2_ssd designs come to the tolerance, and how far are wrong ones?

For fresh calls per smoke workload (the task's make_inputs; every tenth call also scaled by the task's
input_scale, as the harness does), the worst matrix's err / bound over both outputs (y per token,
final_state per head) with the harness's compare() against exact():

* honest: the fp32 reference (chunks of 256), and on the first ``--kernel-calls`` seeds the expert and the
  naive solution under the interpreter (with the harness's interpreter fix);
* wrong (the recurrence step by step in float64, y rounded to bfloat16): the state not passed across
  chunks of 16 steps, the segment sum off by one step (each input decayed by its own step too), dt applied
  to C instead of B, and the D skip dropped.

Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/mamba2_ssd_false_failure.py --calls 200 --kernel-calls 20
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
Design = Callable[[dict[str, Any]], Outputs]
CHEAT_CHUNK = 16


def wrong_scan(made: dict[str, Any], mistake: str) -> Outputs:
    """The recurrence in float64 with one mistake; y rounded to bfloat16 as a kernel stores it."""
    x, dt, A, D = made["x"].double(), made["dt"].double(), made["A"].double(), made["D"].double()
    batch, T, H, P = x.shape
    G, N = made["Bm"].shape[2:]
    group = torch.arange(H) // (H // G)
    Bd, Cd = made["Bm"].double()[:, :, group], made["Cm"].double()[:, :, group]
    state = torch.zeros(batch, H, P, N, dtype=torch.float64)
    y = torch.empty(batch, T, H, P, dtype=torch.float64)
    for t in range(T):
        if mistake == "state_not_passed" and t % CHEAT_CHUNK == 0:
            state = torch.zeros_like(state)
        decay = torch.exp(dt[:, t] * A)[..., None, None]
        weight = torch.ones_like(dt[:, t]) if mistake == "dt_on_c" else dt[:, t]
        step = (weight[..., None] * x[:, t])[..., None] * Bd[:, t, :, None, :]
        state = decay * (state + step) if mistake == "segsum_off_by_one" else decay * state + step
        out = (state @ Cd[:, t, :, :, None]).squeeze(-1)
        if mistake == "dt_on_c":
            out = out * dt[:, t, :, None]
        y[:, t] = out if mistake == "d_skip_dropped" else out + D[:, None] * x[:, t]
    return y.to(torch.bfloat16), state.float()


WRONG = ("state_not_passed", "segsum_off_by_one", "dt_on_c", "d_skip_dropped")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="fresh calls per smoke workload (reference, wrong designs)")
    parser.add_argument("--kernel-calls", type=int, default=20, help="of which the Triton designs run on the first N")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("mamba2_ssd")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "mamba2_ssd_naive.py", "_ff_naive")
    designs: dict[str, Design] = {
        "reference": lambda m: ref.reference(**m),
        "expert": lambda m: expert.run(**m),
        "naive": lambda m: naive.run(**m),
        **{name: (lambda m, name=name: wrong_scan(m, name)) for name in WRONG},
    }
    kernels = {"expert", "naive"}
    rule = task.spec.tolerance
    scale = task.spec.checks.input_scale
    for workload in task.spec.smoke_workloads:
        ratios: dict[str, dict[str, list[float]]] = {name: {"y": [], "final_state": []} for name in designs}
        started = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            scaled = {k: v * scale if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in made.items()}
            for call in [made, scaled] if seed % 10 == 0 else [made]:
                want = ref.exact(**call)
                for name, design in designs.items():
                    if name in kernels and seed >= args.kernel_calls:
                        continue
                    got = design(call)
                    for index, output in enumerate(("y", "final_state")):
                        result = compare(got[index], want[index], rule.rule_for(output))
                        ratios[name][output].append(result.rel_err / (result.bound or rule.matrix_rel_fro or 1.0))
        print(f"{workload.name}: {args.calls} fresh calls (+ x{scale:g} every tenth) in {time.time() - started:.0f} s")
        print("  design                 worst err / bound: y (max, min)   final_state (max, min)   failing calls")
        for name, per in ratios.items():
            worst = [max(a, b) for a, b in zip(per["y"], per["final_state"], strict=True)]
            y, fs = per["y"], per["final_state"]
            print(
                f"  {name:20s} {max(y):8.3g} {min(y):8.3g}       {max(fs):8.3g} {min(fs):8.3g}"
                f"      {sum(v > 1 for v in worst)} of {len(worst)} (min over both {min(worst):.3g})"
            )


if __name__ == "__main__":
    main()
