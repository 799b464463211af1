"""How close do honest causal_attention_fwd designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the x4-scaled call the
harness makes), scores with the harness's own compare() and the task's tolerance:

* honest: the eager reference (float32 scores, bfloat16 probabilities), the expert
  (tasks/causal_attention_fwd/expert.py) and the naive solution
  (tests/solutions/causal_attention_fwd_naive.py), both under the Triton interpreter on the CPU with
  the harness's interpreter fix (exact bfloat16 tl.dot);
* wrong (emulated in float64 torch with the red-team cheats' math): no causal mask, the diagonal
  32-key tile unmasked, query head h on key/value head h % Hkv, and a float32 softmax without its row
  maximum (exp overflows on the scaled call).

Prints, per workload and design, the worst err / bound over the calls (honest must stay below 1, wrong
above it) and the number of failing calls.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/causal_attention_fwd_false_failure.py --calls 100
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

TILE = 32  # the cheats' key tile


def emulate(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, *, mode: str) -> torch.Tensor:
    """A wrong design's output, float64 math on the bfloat16 inputs (float32 exp for ``no_max``)."""
    Hq, S = q.shape[1], q.shape[2]
    Hkv = k.shape[1]
    heads = torch.arange(Hq)
    kv = heads % Hkv if mode == "gqa_modulo" else heads // (Hq // Hkv)
    kd, vd = k[:, kv].double(), v[:, kv].double()
    s = torch.matmul(q.double(), kd.transpose(-2, -1)) * scale
    i = torch.arange(S)[:, None]
    j = torch.arange(S)[None, :]
    if mode == "non_causal":
        visible = torch.ones((S, S), dtype=torch.bool)
    elif mode == "diagonal_unmasked":
        visible = j // TILE <= i // TILE
    else:
        visible = j <= i
    if mode == "no_max":
        p = torch.where(visible, torch.exp(s.float()), 0.0).double()
        return (torch.matmul(p, vd) / p.sum(-1, keepdim=True)).to(torch.bfloat16)
    p = torch.softmax(s.masked_fill(~visible, float("-inf")), dim=-1)
    return torch.matmul(p, vd).to(torch.bfloat16)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    args = parser.parse_args()
    interpreter_fix.install()  # as the harness's solution process does: exact bfloat16 tl.dot
    task = Catalog(REPO / "tasks", REPO / "guidance").task("causal_attention_fwd")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "causal_attention_fwd_naive.py", "_ff_naive")
    designs: dict[str, Callable[..., torch.Tensor]] = {
        "reference": ref.reference,
        "expert": expert.run,
        "naive": naive.run,
        "cheat_non_causal": lambda **a: emulate(**a, mode="non_causal"),
        "cheat_diagonal_unmasked": lambda **a: emulate(**a, mode="diagonal_unmasked"),
        "cheat_gqa_modulo": lambda **a: emulate(**a, mode="gqa_modulo"),
        "cheat_no_running_max": lambda **a: emulate(**a, mode="no_max"),
    }
    scale = task.spec.checks.input_scale
    for workload in task.spec.smoke_workloads:
        rule = task.tolerance_for(workload).rule_for("o")
        bound = rule.matrix_rel_fro or 1.0
        worst = {name: [0.0, float("inf"), 0] for name in designs}  # max ratio, min ratio, failing calls
        scaled_worst = dict.fromkeys(designs, 0.0)
        start = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            calls = [(made, False)]
            if seed % 10 == 0 and scale:  # the harness's scaled call, on a tenth of the seeds
                calls.append(({k: v * scale if isinstance(v, torch.Tensor) else v for k, v in made.items()}, True))
            for call, scaled in calls:
                oracle = ref.exact(**call)
                for name, fn in designs.items():
                    out = fn(**{k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in call.items()})
                    res = compare(out, oracle, rule)
                    ratio = res.rel_err / (res.bound or bound)
                    entry = worst[name]
                    entry[0] = max(entry[0], ratio)
                    entry[1] = min(entry[1], ratio)
                    entry[2] += int(not res.ok)
                    if scaled:
                        scaled_worst[name] = max(scaled_worst[name], ratio)
        print(f"{workload.name} ({args.calls} calls, {time.time() - start:.0f} s): err / bound")
        for name, (hi, lo, failing) in worst.items():
            print(f"  {name:24s} max {hi:9.3g}  min {lo:9.3g}  scaled max {scaled_worst[name]:9.3g}  failing calls {failing}")


if __name__ == "__main__":
    main()
