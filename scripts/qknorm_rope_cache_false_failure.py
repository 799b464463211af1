"""How close do honest qknorm_rope_cache designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the x1000-scaled call
the harness makes), scores every compared value (q_out, then the k_cache and v_cache states) with the
harness's own compare() and the task's rule for that value:

* honest: the reference (vLLM's eager forward_native, bfloat16 rotation), the expert
  (tasks/qknorm_rope_cache/expert.py) and the naive three-kernel solution
  (tests/solutions/qknorm_rope_cache_naive.py), both run under the Triton interpreter on the CPU;
* wrong (emulated in float64 torch, exactly the red-team cheats' math): cos/sin by token index instead
  of position, cache slots arange(T) instead of slot_mapping, GPT-J (interleaved) rotation instead of
  NeoX halves, RMSNorm over all heads of a token instead of each head, and v written RMS-normalised.

Prints, per workload and design, the worst err / bound over the calls for each compared value (honest
must stay below 1, wrong above it; for the bit-exact v_cache rule: the number of differing values) and
the number of failing calls. With --registered, runs the reference, an fp32 torch emulation of the
expert (one rounding to bfloat16, round to nearest as the GPU casts) and the cheats on the registered
workloads instead, a few seeds each, on the CPU.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/qknorm_rope_cache_false_failure.py --calls 100
       .venv/bin/python scripts/qknorm_rope_cache_false_failure.py --registered --calls 3
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

Inputs = dict[str, torch.Tensor]
COMPARED = ("q_out", "k_cache", "v_cache")


def dims(d: Inputs) -> tuple[int, int, int, int, int]:
    _, _, Hkv, D = d["k_cache"].shape
    return d["qkv"].shape[0], d["qkv"].shape[1] // D - 2 * Hkv, Hkv, D, d["cos_sin_cache"].shape[1]


def emulate(
    d: Inputs,
    *,
    dtype: torch.dtype = torch.float64,
    by_index: bool = False,
    arange_slots: bool = False,
    interleaved: bool = False,
    all_heads: bool = False,
    v_normed: bool = False,
) -> torch.Tensor:
    """The operator in ``dtype`` with one of the cheats' mistakes; updates d's caches, returns q_out."""
    T, Hq, Hkv, D, R = dims(d)
    x = d["qkv"].to(dtype)
    pos = torch.arange(T) if by_index else d["positions"]
    slots = torch.arange(T) if arange_slots else d["slot_mapping"]
    cs = d["cos_sin_cache"].to(dtype)[pos]
    cos, sin = cs[:, None, : R // 2], cs[:, None, R // 2 :]

    def norm(h: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
        dims_ = (-2, -1) if all_heads else (-1,)
        h = h / torch.sqrt(h.square().mean(dim=dims_, keepdim=True) + 1e-6)
        return h if w is None else h * w.to(dtype)

    def rope(h: torch.Tensor) -> torch.Tensor:
        rot, rest = h[..., :R], h[..., R:]
        if interleaved:
            e, o = rot[..., 0::2], rot[..., 1::2]
            out = torch.stack((e * cos - o * sin, o * cos + e * sin), dim=-1).flatten(-2)
        else:
            lo, hi = rot[..., : R // 2], rot[..., R // 2 :]
            out = torch.cat((lo * cos - hi * sin, hi * cos + lo * sin), dim=-1)
        return torch.cat((out, rest), dim=-1)

    q = rope(norm(x[:, : Hq * D].reshape(T, Hq, D), d["q_norm_weight"]))
    k = rope(norm(x[:, Hq * D : (Hq + Hkv) * D].reshape(T, Hkv, D), d["k_norm_weight"]))
    v = x[:, (Hq + Hkv) * D :].reshape(T, Hkv, D)
    if v_normed:
        v = norm(v, None)
    d["k_cache"].view(-1, Hkv, D)[slots] = k.to(torch.bfloat16)
    d["v_cache"].view(-1, Hkv, D)[slots] = v.to(torch.bfloat16)
    return q.to(torch.bfloat16)


CHEATS: dict[str, dict[str, bool]] = {
    "cheat_positions_as_index": {"by_index": True},
    "cheat_contiguous_slots": {"arange_slots": True},
    "cheat_gptj_interleaved": {"interleaved": True},
    "cheat_norm_all_heads": {"all_heads": True},
    "cheat_v_normalised": {"v_normed": True},
}


def score(task: Any, workload: Any, ref: Any, designs: dict[str, Callable[..., torch.Tensor]], call: Inputs, worst: dict) -> None:
    """Run every design on a copy of ``call`` and fold its err / bound per compared value into ``worst``."""
    tol = task.tolerance_for(workload)
    oracle_in = {k: v.clone() for k, v in call.items()}
    oracle = {"q_out": ref.exact(**oracle_in), "k_cache": oracle_in["k_cache"], "v_cache": oracle_in["v_cache"]}
    for name, fn in designs.items():
        d = {k: v.clone() for k, v in call.items()}
        got = {"q_out": fn(**d), "k_cache": d["k_cache"], "v_cache": d["v_cache"]}
        failed = False
        for value in COMPARED:
            rule = tol.rule_for(value)
            res = compare(got[value], oracle[value], rule)
            if rule.matrix_rel_fro is not None:
                ratio = res.rel_err / rule.matrix_rel_fro
            else:  # the bit-exact rule: count the values that differ
                ratio = float((got[value] != oracle[value]).sum())
            entry = worst[name][value]
            entry[0], entry[1] = max(entry[0], ratio), min(entry[1], ratio)
            failed |= not res.ok
        worst[name]["failing"] += int(failed)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per workload")
    parser.add_argument("--registered", action="store_true", help="registered workloads, torch designs only")
    args = parser.parse_args()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("qknorm_rope_cache")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    designs: dict[str, Callable[..., torch.Tensor]] = {"reference": ref.reference}
    if args.registered:
        designs["fp32_rounded_once"] = lambda **d: emulate(d, dtype=torch.float32)
        workloads = task.spec.workloads
    else:
        expert = import_file(task.file("expert.py"), "_ff_expert")
        naive = import_file(REPO / "tests" / "solutions" / "qknorm_rope_cache_naive.py", "_ff_naive")
        designs |= {"expert": expert.run, "naive": naive.run}
        workloads = task.spec.smoke_workloads
    for cheat, how in CHEATS.items():
        designs[cheat] = lambda how=how, **d: emulate(d, **how)
    scale = task.spec.checks.input_scale
    for workload in workloads:
        worst: dict[str, Any] = {n: {v: [0.0, float("inf")] for v in COMPARED} | {"failing": 0} for n in designs}
        start = time.time()
        calls = 0
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            batch = [made]
            if (seed % 10 == 0 or args.registered) and scale:  # the harness's scaled call
                batch.append({k: v * scale if v.is_floating_point() else v for k, v in made.items()})
            for call in batch:
                score(task, workload, ref, designs, call, worst)
                calls += 1
        print(f"{workload.name} ({calls} calls, {time.time() - start:.0f} s): err / bound (v_cache: differing values)")
        for name, entry in worst.items():
            cells = "  ".join(f"{v} max {entry[v][0]:8.3g} min {entry[v][1]:8.3g}" for v in COMPARED)
            print(f"  {name:26s} {cells}  failing calls {entry['failing']}")


if __name__ == "__main__":
    main()
