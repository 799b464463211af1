"""How close do honest fused_linear_jsd designs come to the tolerance, and how far are wrong ones from it?

For fresh calls per smoke workload (inputs from the task's make_inputs, every call drawing beta and the
temperature as the harness's do, plus the scaled call the harness makes (x3)), scores with the harness's own
compare() and the task's rules (loss 1e-4, dhs and dWs 1e-2 against the float64 exact()):

* honest: the expert (tasks/fused_linear_jsd/expert.py) and the naive solution (tests/solutions/
  fused_linear_jsd_naive.py) under the Triton interpreter, and, for scale, the bfloat16-logit eager reference
  (outside the bound by design: description.md);
* wrong: every red-team cheat in tests/redteam/fused_linear_jsd_cheats/ (appended to the naive solution),
  counted only on the calls whose beta shows its bug (beta_swapped at beta != 0.5, geometric_mixture at
  0 < beta < 1, no_softmax_term at beta != 0).

Prints, per workload and design, the worst (honest) or least (wrong) error / bound over the calls, taking per
call the largest ratio over the three outputs, and the number of failing calls.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/fused_linear_jsd_false_failure.py --calls 20
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "redteam"))
sys.path.insert(0, str(REPO / "tests"))  # naive_cheats imports pooled_evaluate

import torch  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.checker.compare import compare  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402
from workbench.harness.solution import interpreter_fix  # noqa: E402

OUTPUTS = ("loss", "dhs", "dWs")
HONEST = ("expert", "naive", "reference")


def shows_bug(cheat: str, beta: float) -> bool:
    """Whether the cheat's bug changes the result at this beta (see tests/redteam/test_fused_linear_jsd_redteam.py)."""
    if cheat == "beta_swapped":
        return beta != 0.5
    if cheat == "geometric_mixture":
        return 0.0 < beta < 1.0
    if cheat == "no_softmax_term":
        return beta != 0.0
    return True


def ratio(task: Any, outputs: tuple[torch.Tensor, ...], oracle: tuple[torch.Tensor, ...]) -> float:
    """The largest error / bound over the outputs of one call."""
    worst = 0.0
    for name, out, want in zip(OUTPUTS, outputs, oracle, strict=True):
        rule = task.spec.tolerance.rule_for(name)
        worst = max(worst, compare(out, want, rule).rel_err / rule.matrix_rel_fro)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=20, help="fresh calls per smoke workload (one more is scaled)")
    args = parser.parse_args()
    interpreter_fix.install()
    from naive_cheats import assemble, cheats_of  # tests/redteam

    task = Catalog(REPO / "tasks", REPO / "guidance").task("fused_linear_jsd")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    folder = Path(tempfile.mkdtemp())
    designs: dict[str, Callable[..., Any]] = {
        "expert": import_file(task.file("expert.py"), "_ff_expert").run,
        "naive": import_file(REPO / "tests" / "solutions" / "fused_linear_jsd_naive.py", "_ff_naive").run,
        "reference": ref.reference,
    }
    for cheat in sorted(cheats_of(task.id)):
        designs[cheat] = import_file(assemble(task.id, cheat, folder), f"_ff_{cheat}").run
    scale = task.spec.checks.input_scale
    for workload in task.spec.smoke_workloads:
        stats = {name: [0.0 if name in HONEST else float("inf"), 0, 0] for name in designs}  # ratio, failing, calls
        start = time.time()
        for call in range(args.calls + 1):
            made = inputs.make_inputs(workload.axes, 1000 + call, "cpu")
            if call == args.calls:  # the harness's scaled call
                for key in ("hs", "Ws", "ht", "Wt"):
                    made[key] = (made[key].float() * scale).to(torch.bfloat16)
            oracle = ref.exact(**made)
            for name, run in designs.items():
                if name not in HONEST and not shows_bug(name, made["beta"]):
                    continue
                r = ratio(task, run(**made), oracle)
                entry = stats[name]
                entry[0] = max(entry[0], r) if name in HONEST else min(entry[0], r)
                entry[1] += r > 1
                entry[2] += 1
        print(f"{workload.name} ({args.calls} fresh calls + 1 scaled x{scale:g}, {time.time() - start:.0f} s)")
        for name, (value, failing, calls) in stats.items():
            kind = "honest worst" if name in HONEST else "wrong least"
            print(f"  {name:18s} {kind} {value:9.3g} of the bound, {failing}/{calls} calls fail")


if __name__ == "__main__":
    main()
