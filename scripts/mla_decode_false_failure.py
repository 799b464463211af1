"""How close do honest mla_decode designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the x0.5-scaled call
the harness makes), scores with the harness's own compare() and the task's tolerance:

* honest: the reference (up-projected, fp32 logits), the expert (tasks/mla_decode/expert.py) and the
  naive per-head solution (tests/solutions/mla_decode_naive.py), both under the Triton interpreter with
  the harness's interpreter fixes (bfloat16 tl.dot);
* wrong (emulated in float64 torch, exactly the red-team cheats' math): softmax scale 1/sqrt(DN),
  scores without the rope part, w_uk read transposed, and attention over the last half of the cache
  only (an unmerged split).

Prints, per workload and design, the worst err / bound over the calls (honest must stay below 1, wrong
above it; for the wrong ones also the smallest) and the number of failing calls.
Usage: .venv/bin/python scripts/mla_decode_false_failure.py --calls 100 [--workload NAME ...]
"""

from __future__ import annotations

import argparse
import math
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


def absorbed64(
    d: dict[str, torch.Tensor], scale: float | None = None, rope: bool = True, wuk_transposed: bool = False, start: int = 0
) -> torch.Tensor:
    """The absorbed operator in float64, with one of the cheats' changes."""
    f = torch.float64
    _, H, DN = d["q_nope"].shape
    DC, DR = d["kv_c"].shape[2], d["q_pe"].shape[2]
    w = d["w_uk"].to(f)
    if wuk_transposed:
        w = w.reshape(H, DC, DN).transpose(1, 2)
    q_lat = torch.einsum("bhn,hnc->bhc", d["q_nope"].to(f), w)
    c, kp = d["kv_c"].to(f)[:, start:], d["k_pe"].to(f)[:, start:]
    s = torch.einsum("bhc,blc->bhl", q_lat, c)
    if rope:
        s = s + torch.einsum("bhr,blr->bhl", d["q_pe"].to(f), kp)
    s = s * (scale if scale is not None else 1.0 / math.sqrt(DN + DR))
    o_lat = torch.einsum("bhl,blc->bhc", torch.softmax(s, dim=-1), c)
    return torch.einsum("bhc,hcv->bhv", o_lat, d["w_uv"].to(f)).to(torch.bfloat16)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    parser.add_argument("--workload", action="append", default=[], help="smoke workload to run (repeatable; default: all)")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("mla_decode")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "mla_decode_naive.py", "_ff_naive")
    designs: dict[str, Callable[..., torch.Tensor]] = {
        "reference": ref.reference,
        "expert": expert.run,
        "naive": naive.run,
        "cheat_scale_dn": lambda **d: absorbed64(d, scale=1.0 / math.sqrt(d["q_nope"].shape[2])),
        "cheat_no_rope": lambda **d: absorbed64(d, rope=False),
        "cheat_w_uk_transposed": lambda **d: absorbed64(d, wuk_transposed=True),
        "cheat_last_split_only": lambda **d: absorbed64(d, start=d["kv_c"].shape[1] // 2),
    }
    scale = task.spec.checks.input_scale
    names = {w.name for w in task.spec.smoke_workloads}
    unknown = sorted(set(args.workload) - names)
    if unknown:
        parser.error(f"unknown smoke workload(s) {unknown}; choose from {sorted(names)}")
    for workload in task.spec.smoke_workloads:
        if args.workload and workload.name not in args.workload:
            continue
        rule = task.tolerance_for(workload).rule_for("o")
        worst = {name: [0.0, float("inf"), 0] for name in designs}  # max ratio, min ratio, failing calls
        start = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            calls = [made]
            if seed % 10 == 0 and scale:  # the harness's scaled call, on a tenth of the seeds
                calls.append({k: v * scale for k, v in made.items()})
            for call in calls:
                oracle = ref.exact(**call)
                for name, fn in designs.items():
                    out = fn(**{k: v.clone() for k, v in call.items()})
                    res = compare(out, oracle, rule)
                    ratio = res.rel_err / (res.bound or rule.matrix_rel_fro or 1.0)
                    entry = worst[name]
                    entry[0] = max(entry[0], ratio)
                    entry[1] = min(entry[1], ratio)
                    entry[2] += int(ratio > 1)
        print(f"{workload.name} ({args.calls} calls, {time.time() - start:.0f} s): err / bound")
        for name, (hi, lo, failing) in worst.items():
            print(f"  {name:22s} max {hi:9.3g}  min {lo:9.3g}  failing calls {failing}")


if __name__ == "__main__":
    main()
