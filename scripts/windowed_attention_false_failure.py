"""How close do honest windowed_attention designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the x4-scaled call the
harness makes), scores every query row with the harness's own compare() under the task's rule (the
"rows" view: each row of o its own [1, D] matrix):

* honest: the fp32 reference; a torch emulation of a flash kernel's rounding on the GPU (fp32 scores and
  softmax statistics, probabilities rounded to bfloat16 to nearest for P V, output rounded to nearest);
  the expert (tasks/windowed_attention/expert.py) and the naive solution
  (tests/solutions/windowed_attention_naive.py), both under the Triton interpreter on the CPU;
* wrong (exact() in float64 with the red-team cheats' mask): the window ignored, the window one key
  too wide, the documents ignored, and the documents assumed in ascending order of length.

With --registered, the same for the honest emulations and the off-by-one window at the registered
windows and head dimension (W = 4096 and 1024, D = 128; one sequence of 4 heads, the last 512 rows of
W + 512 tokens compared, which see full windows), under the registered (GPU) rule.
Prints, per workload and design, the worst err / bound over the calls (honest must stay below 1, wrong
above it), the smallest worst-row ratio over the calls, and the number of failing calls.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/windowed_attention_false_failure.py --calls 40 [--registered]
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


def flash_emulation(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, window: int, ref: Any
) -> torch.Tensor:
    """A flash kernel's rounding on the GPU, in torch: fp32 scores and sums, bf16 (nearest) P and o."""
    B, _, S, D = q.shape
    out = torch.empty_like(q)
    for b in range(B):
        blocked = ~ref.allowed_mask(cu_seqlens[b], S, window)
        s = (q[b].float() @ k[b].float().transpose(-1, -2)) / D**0.5
        s.masked_fill_(blocked, float("-inf"))
        p = torch.exp(s - s.amax(dim=-1, keepdim=True))
        o = p.to(torch.bfloat16).float() @ v[b].float() / p.sum(dim=-1, keepdim=True)
        out[b] = o.to(torch.bfloat16)
    return out


def sorted_bounds(cu_seqlens: torch.Tensor, S: int) -> torch.Tensor:
    ndoc = cu_seqlens.shape[1] - 1
    row = torch.tensor([d * d * (S // (ndoc * ndoc)) for d in range(ndoc + 1)], dtype=torch.int32)
    return row.expand(cu_seqlens.shape[0], -1).contiguous()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="fresh calls per smoke workload")
    parser.add_argument("--registered", action="store_true", help="also the registered windows (emulations only)")
    args = parser.parse_args()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("windowed_attention")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "windowed_attention_naive.py", "_ff_naive")
    interpreter_fix.install()
    honest: dict[str, Callable[..., torch.Tensor]] = {
        "reference": ref.reference,
        "flash_emulation": lambda **a: flash_emulation(**a, ref=ref),
        "expert": expert.run,
        "naive": naive.run,
    }
    wrong: dict[str, Callable[..., torch.Tensor]] = {
        "cheat_no_window": lambda q, k, v, cu_seqlens, window: ref.exact(q, k, v, cu_seqlens, q.shape[2]),
        "cheat_window_off_by_one": lambda q, k, v, cu_seqlens, window: ref.exact(q, k, v, cu_seqlens, window + 1),
        "cheat_no_documents": lambda q, k, v, cu_seqlens, window: ref.exact(
            q, k, v, torch.tensor([[0, q.shape[2]]] * q.shape[0], dtype=torch.int32), window
        ),
        "cheat_sorted_documents": lambda q, k, v, cu_seqlens, window: ref.exact(
            q, k, v, sorted_bounds(cu_seqlens, q.shape[2]), window
        ),
    }
    scale = task.spec.checks.input_scale
    cases: list[tuple[str, dict[str, int], Any, int, dict[str, Callable[..., torch.Tensor]]]] = [
        (w.name, w.axes, task.tolerance_for(w), args.calls, {**honest, **wrong}) for w in task.spec.smoke_workloads
    ]
    if args.registered:
        emulations = {k: honest[k] for k in ("reference", "flash_emulation")}
        emulations["cheat_window_off_by_one"] = wrong["cheat_window_off_by_one"]
        for W in (4096, 1024):
            axes = {"B": 1, "H": 4, "S": W + 512, "D": 128, "W": W, "NDOC": 1}
            cases.append((f"registered_like_w{W}", axes, task.spec.tolerance, max(1, args.calls // 8), emulations))
    for name, axes, tol, calls, designs in cases:
        rule = tol.rule_for("o")
        skip = 512 if name.startswith("registered") else 0  # rows with full windows only
        worst = {d: [0.0, float("inf"), 0, 0] for d in designs}  # max ratio, min ratio, failing, calls
        start = time.time()
        for seed in range(calls):
            made = inputs.make_inputs(axes, seed, "cpu")
            trials = [made]
            if seed % 10 == 0 and scale:  # the harness's scaled call, on a tenth of the seeds
                trials.append({**made, **{n: made[n] * scale for n in ("q", "k", "v")}})
            for call in trials:
                oracle = ref.rows({"o": ref.exact(**call)[..., -skip:, :] if skip else ref.exact(**call)}, call)["o"]
                for design, fn in designs.items():
                    out = fn(**{n: (x.clone() if isinstance(x, torch.Tensor) else x) for n, x in call.items()})
                    out = out[..., -skip:, :] if skip else out
                    res = compare(ref.rows({"o": out}, call)["o"], oracle, rule)
                    ratio = res.rel_err / (res.bound or rule.matrix_rel_fro)
                    entry = worst[design]
                    entry[0], entry[1] = max(entry[0], ratio), min(entry[1], ratio)
                    entry[2] += int(ratio > 1)
                    entry[3] += 1
        print(f"{name} ({calls} seeds, {time.time() - start:.0f} s): worst row err / bound {rule.matrix_rel_fro:g}")
        for design, (hi, lo, failing, n) in worst.items():
            print(f"  {design:26s} max {hi:9.3g}  min {lo:9.3g}  failing calls {failing}/{n}")


if __name__ == "__main__":
    main()
