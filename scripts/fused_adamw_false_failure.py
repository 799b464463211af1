"""How close do honest fused_adamw steps come to the tolerance, and how far are wrong ones from it?

Fresh calls per smoke workload (the task's make_inputs; every tenth call also x1e-3-scaled as the harness's scaled
trial does), each scored with the harness's compare() and the workload's per-list rules against exact(), element
by element (smoke_mixed_12t has bfloat16 states and their one-ulp rule). Honest: the eager reference, the library
call (torch._fused_adamw_ on fp32 copies of the grads), the expert and the naive solution under the Triton
interpreter (with the harness's interpreter fixes). Wrong, as the reference step with one change: no
weight decay, no bias correction, beta2 for beta1, eps inside the square root, the step off by one.

Prints per design the worst err / bound over all calls (the largest |got - oracle| / (atol + rtol |oracle|) of
any element of params, exp_avg or exp_avg_sq) and the failing calls: honest designs must stay below 1 on every
call, wrong ones every fresh call (the step off by one only where beta2^step >= 0.5, where it matters; the
x1e-3 call, which shrinks the weight decay's and the step's effects below the atols, is counted apart).
Usage: .venv/bin/python scripts/fused_adamw_false_failure.py --calls 100
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.checker.compare import compare  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402
from workbench.harness.solution import interpreter_fix  # noqa: E402

TASK = Catalog(REPO / "tasks", REPO / "guidance").task("fused_adamw")
STATES = ("params", "exp_avg", "exp_avg_sq")
reference = import_file(TASK.file("reference.py"), "_ff_fused_adamw_reference")
inputs = import_file(TASK.file("inputs.py"), "_ff_fused_adamw_inputs")
expert = import_file(TASK.file("expert.py"), "_ff_fused_adamw_expert")
naive = import_file(REPO / "tests" / "solutions" / "fused_adamw_naive.py", "_ff_fused_adamw_naive")

Step = Callable[..., Any]


def copied(made: dict[str, Any]) -> dict[str, Any]:
    return {k: [t.clone() for t in v] if isinstance(v, list) else v for k, v in made.items()}


def changed(**override: Any) -> Step:
    """The reference step with some scalars replaced (a wrong design)."""

    def step(**made: Any) -> None:
        values = dict(made)
        for key, fn in override.items():
            values[key] = fn(values)
        reference.reference(**values)

    return step


def eps_inside(**made: Any) -> None:
    """eps inside the square root: denominators sqrt(v_hat + eps) (a common slip)."""
    values = dict(made)
    values["eps"] = math.sqrt(made["eps"])  # sqrt(v_hat) + sqrt(eps) bounds sqrt(v_hat + eps) from above
    reference.reference(**values)


HONEST: dict[str, Step] = {
    "reference": reference.reference,
    "library": reference.library,
    "expert (interpreter)": expert.run,
    "naive (interpreter)": naive.run,
}
WRONG: dict[str, Step] = {
    "no weight decay": changed(weight_decay=lambda v: 0.0),
    "no bias correction": changed(step=lambda v: 10**9),
    "beta2 for beta1": changed(beta1=lambda v: v["beta2"]),
    "eps inside the sqrt": eps_inside,
    "step off by one": changed(step=lambda v: v["step"] + 1),
}


def score(step: Step, made: dict[str, Any], want: dict[str, Any], tolerance: Any) -> tuple[float, bool]:
    """(worst err / bound over every element, whether every element passes the workload's rule)."""
    got = copied(made)
    step(**got)
    worst, ok = 0.0, True
    for name in STATES:
        rule = tolerance.rule_for(name)
        for a, b in zip(got[name], want[name], strict=True):
            ok = ok and compare(a, b, rule).ok
            e = b.double()
            r = float(((a.double() - e).abs() / ((rule.atol or 0.0) + (rule.rtol or 0.0) * e.abs())).max())
            worst = max(worst, r if math.isfinite(r) else math.inf)
    return worst, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload (default 100)")
    args = parser.parse_args()
    interpreter_fix.install()  # the harness's solution process runs kernels so (bfloat16 stores rounded to nearest)
    started = time.perf_counter()
    for workload in TASK.spec.smoke_workloads:
        rows: dict[str, list[tuple[float, bool]]] = {name: [] for name in [*HONEST, *WRONG]}
        late: list[bool] = []
        for call in range(args.calls):
            made = inputs.make_inputs(workload.axes, 1000 + call, "cpu")
            if call % 10 == 9:  # the harness's scaled trial
                for name in ("params", "grads", "exp_avg", "exp_avg_sq"):
                    for t in made[name]:
                        t.mul_(TASK.spec.checks.input_scale)
            want = copied(made)
            reference.exact(**want)
            late.append(made["beta2"] ** made["step"] < 0.5)
            for name, step in [*HONEST.items(), *WRONG.items()]:
                rows[name].append(score(step, made, want, TASK.tolerance_for(workload)))
        print(f"{workload.name} ({args.calls} calls, {time.perf_counter() - started:.0f} s so far)")
        for name, results in rows.items():
            honest = name in HONEST
            counted = [
                (r, ok, call % 10 == 9)
                for call, ((r, ok), is_late) in enumerate(zip(results, late, strict=True))
                if honest or name != "step off by one" or not is_late
            ]
            ratios = [r for r, _, _ in counted]
            fresh = [ok for _, ok, scaled in counted if not scaled]
            scaled = [ok for _, ok, is_scaled in counted if is_scaled]
            kind = "honest" if honest else "wrong"
            print(
                f"  {kind:6} {name:22} err/bound {min(ratios):9.3g} .. {max(ratios):9.3g}   failing: fresh "
                f"{fresh.count(False)}/{len(fresh)}, scaled {scaled.count(False)}/{len(scaled)}"
            )


if __name__ == "__main__":
    main()
