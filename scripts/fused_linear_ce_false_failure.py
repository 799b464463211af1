"""How close do honest fused_linear_ce designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the harness's x4-scaled call
on every fifth seed), scores with the harness's own compare() and the task's tolerance (the reference's error
on the same call included, as the checker computes it):

* honest: the eager reference (bfloat16 logits), the expert (tasks/fused_linear_ce/expert.py) and the naive
  solution (tests/solutions/fused_linear_ce_naive.py), both under the Triton interpreter on the CPU;
* wrong (emulated in float64 torch, the red-team cheats' math): ignored tokens kept with target 0, the mean over
  all BT tokens, the vocabulary cut to V // 64 * 64 entries, dW without the last BT % 16 tokens, and the
  log-sum-exp with a bfloat16 online state over 64-wide steps.

Then, at registered vocabularies with a small D (float64 emulation only, CPU-cheap), the reference and the
bfloat16 online state, where the latter's rounding over 2000-4000 steps shows.

Prints, per workload and design, the worst and best err / bound over the calls (the max over the three outputs)
and the number of failing calls. Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/fused_linear_ce_false_failure.py --calls 30
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

Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
NAMES = ("loss", "dh", "dW")


def emulate(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor, *, cheat: str = "", dw_rows: int = -1) -> Outputs:
    """The loss and gradients in float64 from float64 logits, G rounded to bfloat16 before the products, with one
    of the cheats' mistakes."""
    t = targets.clone()
    if cheat == "ignored_rows_kept":
        t = t.clamp_min(0)
    V = W.shape[0]
    seen = V // 64 * 64 if cheat == "vocab_prefix" else V
    z = h.double() @ W.double()[:seen].mT
    keep = t != -100
    n = float(len(t)) if cheat == "mean_over_all_tokens" else float(keep.sum())
    if cheat == "lse_bf16_state":
        lse = bf16_state_lse(z)
    else:
        lse = torch.logsumexp(z, dim=1)
    safe = torch.where(keep, t, torch.zeros_like(t))
    zt = (h.double() * W.double()[safe]).sum(dim=1)
    loss = torch.where(keep, lse - zt, torch.zeros_like(lse)).sum() / n
    g = torch.exp(z - lse[:, None])
    inside = keep & (safe < seen)
    g[inside.nonzero().squeeze(1), safe[inside]] -= 1.0
    g = (g * (keep.double() / n)[:, None]).to(torch.bfloat16).double()
    dh = g @ W.double()[:seen]
    rows = len(t) if dw_rows < 0 else dw_rows
    dW = torch.zeros_like(W, dtype=torch.float64)
    dW[:seen] = g[:rows].mT @ h.double()[:rows]
    return loss.float(), dh.to(torch.bfloat16), dW.to(torch.bfloat16)


def bf16_state_lse(z: torch.Tensor, step: int = 64) -> torch.Tensor:
    """The log-sum-exp with its running max and running sum rounded to bfloat16 after every step."""
    bf = torch.bfloat16
    m = torch.full((z.shape[0],), float("-inf"), dtype=torch.float64).to(bf)
    s = torch.zeros(z.shape[0], dtype=bf)
    for v0 in range(0, z.shape[1], step):
        block = z[:, v0 : v0 + step]
        m_new = torch.maximum(m.double(), block.max(dim=1).values).to(bf)
        grown = s.double() * torch.exp(m.double() - m_new.double())
        s = (grown + torch.exp(block - m_new.double()[:, None]).sum(dim=1)).to(bf)
        m = m_new
    return m.double() + s.double().log()


def ratios(task: Any, rule_of: Callable[[str], Any], outs: Outputs, want: Outputs, ref: Outputs) -> float:
    """The worst err / bound over the three outputs, as the harness computes it."""
    worst = 0.0
    for name, out, w, r in zip(NAMES, outs, want, ref, strict=True):
        result = compare(out, w, rule_of(name), r)
        worst = max(worst, result.rel_err / (result.bound or 1.0))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=30, help="fresh calls per smoke workload")
    parser.add_argument("--registered-calls", type=int, default=3, help="emulated calls per registered vocabulary")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("fused_linear_ce")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "fused_linear_ce_naive.py", "_ff_naive")
    designs: dict[str, Callable[..., Outputs]] = {
        "reference": ref.reference,
        "expert": expert.run,
        "naive": naive.run,
        "cheat_ignored_rows_kept": lambda **a: emulate(**a, cheat="ignored_rows_kept"),
        "cheat_mean_over_all_tokens": lambda **a: emulate(**a, cheat="mean_over_all_tokens"),
        "cheat_vocab_prefix": lambda **a: emulate(**a, cheat="vocab_prefix"),
        "cheat_dw_tail_rows_dropped": lambda **a: emulate(**a, dw_rows=a["h"].shape[0] // 16 * 16),
        "cheat_lse_bf16_state": lambda **a: emulate(**a, cheat="lse_bf16_state"),
    }
    scale = task.spec.checks.input_scale
    for workload in task.spec.smoke_workloads:
        tol = task.tolerance_for(workload)
        worst = {name: [0.0, float("inf"), 0] for name in designs}  # max ratio, min ratio, failing calls
        start = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            calls = [made]
            if seed % 5 == 0 and scale:
                calls.append({k: v * scale if v.is_floating_point() else v for k, v in made.items()})
            for call in calls:
                want, reference_outs = ref.exact(**call), ref.reference(**call)
                for name, fn in designs.items():
                    r = ratios(task, tol.rule_for, fn(**{k: v.clone() for k, v in call.items()}), want, reference_outs)
                    entry = worst[name]
                    entry[0], entry[1], entry[2] = max(entry[0], r), min(entry[1], r), entry[2] + int(r > 1)
        scaled = len(range(0, args.calls, 5))
        print(f"{workload.name} ({args.calls} calls + {scaled} scaled, {time.time() - start:.0f} s): err / bound")
        for name, (hi, lo, failing) in worst.items():
            print(f"  {name:28s} max {hi:9.3g}  min {lo:9.3g}  failing calls {failing}")
    tol = task.spec.tolerance
    for V in (128256, 151936, 256000):
        axes = {"BT": 64, "D": 32, "V": V}
        honest_max, cheat_min = 0.0, float("inf")
        for seed in range(args.registered_calls):
            made = inputs.make_inputs(axes, seed, "cpu")
            want = ref.exact(**made)
            reference_like = emulate_bf16_logits(**made)
            honest = emulate(**made)
            honest_max = max(honest_max, ratios(task, tol.rule_for, honest, want, reference_like))
            cheat = emulate(**made, cheat="lse_bf16_state")
            cheat_min = min(cheat_min, ratios(task, tol.rule_for, cheat, want, reference_like))
        print(f"V {V} (BT 64, D 32, {args.registered_calls} calls, emulated): err / bound")
        print(f"  float32-logit design max {honest_max:.3g}, bf16 LSE state min {cheat_min:.3g}")


def emulate_bf16_logits(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor) -> Outputs:
    """The reference's numerics without its bfloat16 CPU matmul (slow at large V): logits rounded to bfloat16."""
    z = (h.double() @ W.double().mT).to(torch.bfloat16).double()
    keep = targets != -100
    n = float(keep.sum())
    lse = torch.logsumexp(z, dim=1)
    safe = torch.where(keep, targets, torch.zeros_like(targets))
    loss = torch.where(keep, lse - z.gather(1, safe[:, None])[:, 0], torch.zeros_like(lse)).sum() / n
    g = torch.exp(z - lse[:, None])
    g[keep.nonzero().squeeze(1), safe[keep]] -= 1.0
    g = (g * (keep.double() / n)[:, None]).to(torch.bfloat16).double()
    return loss.float(), (g @ W.double()).to(torch.bfloat16), (g.mT @ h.double()).to(torch.bfloat16)


if __name__ == "__main__":
    main()
