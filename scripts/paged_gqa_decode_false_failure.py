"""How close do honest paged_gqa_decode designs come to the tolerance, and how far are wrong ones from it?

For many fresh calls per smoke workload (inputs from the task's make_inputs, plus the scaled call the
harness makes, with the task's input_scale), scores with the harness's own compare() and the task's
tolerance:

* honest: the eager reference, the expert (tasks/paged_gqa_decode/expert.py) and the naive
  per-head solution (tests/solutions/paged_gqa_decode_naive.py), both run under the Triton
  interpreter on the CPU (with the harness's interpreter fixes);
* wrong (emulated in float64 torch, the red-team cheats' math and the issue's other ideas):
  attending to the whole max length (seq_lens ignored), pages read as if the page table were the
  identity, the KV head of query head h taken as h % Hkv, only the last of two splits kept, and the
  length rounded up or down to a whole page.

Prints, per workload and design, the worst and best err / bound over the calls (honest must stay below
1, wrong above it) and the number of failing calls. With --emulate, also scores the reference (in
float32 on the CPU) and the wrong designs on a scaled-down version of each registered workload shape
(same heads and head_dim, shorter L) to show the margins at the real head counts.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/paged_gqa_decode_false_failure.py --calls 100
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

PAGE = 16


def attend(
    d: dict[str, Any],
    lens: list[int] | None = None,
    identity_pages: bool = False,
    modulo_heads: bool = False,
    keep: str = "all",
) -> torch.Tensor:
    """The operator in float64 with one mistake switched on (none by default: the exact oracle)."""
    q, kc, vc, pt, scale = d["q"], d["k_cache"], d["v_cache"], d["page_table"], d["scale"]
    B, Hq, D = q.shape
    Hkv = kc.shape[2]
    G = Hq // Hkv
    kv_of = torch.arange(Hq) % Hkv if modulo_heads else torch.arange(Hq) // G
    lengths = lens if lens is not None else d["seq_lens"].tolist()
    out = torch.empty((B, Hq, D), dtype=torch.float64)
    for b in range(B):
        n = int(lengths[b])
        npg = (n + PAGE - 1) // PAGE
        pages = torch.arange(b * pt.shape[1], b * pt.shape[1] + npg) if identity_pages else pt[b, :npg].long()
        k = kc[pages].reshape(-1, Hkv, D)[:n].double()[:, kv_of]  # [n, Hq, D]
        v = vc[pages].reshape(-1, Hkv, D)[:n].double()[:, kv_of]
        if keep == "last_half":  # a split design that kept only the last of two splits
            k, v = k[n // 2 :], v[n // 2 :]
        s = torch.einsum("hd,nhd->hn", q[b].double(), k) * scale
        out[b] = torch.einsum("hn,nhd->hd", torch.softmax(s, dim=-1), v)
    return out


def wrong_designs() -> dict[str, Callable[[dict[str, Any]], torch.Tensor]]:
    def max_len(d: dict[str, Any]) -> torch.Tensor:
        return attend(d, lens=[d["page_table"].shape[1] * PAGE] * d["q"].shape[0])

    def round_up(d: dict[str, Any]) -> torch.Tensor:
        return attend(d, lens=[(n + PAGE - 1) // PAGE * PAGE for n in d["seq_lens"].tolist()])

    def round_down(d: dict[str, Any]) -> torch.Tensor:
        return attend(d, lens=[max(PAGE, n // PAGE * PAGE) for n in d["seq_lens"].tolist()])

    return {
        "cheat_ignore_seq_lens": max_len,
        "cheat_identity_pages": lambda d: attend(d, identity_pages=True),
        "cheat_gqa_modulo": lambda d: attend(d, modulo_heads=True),
        "cheat_last_split_only": lambda d: attend(d, keep="last_half"),
        "wrong_len_round_up_16": round_up,
        "wrong_len_round_down_16": round_down,
    }


def keyword_call(fn: Callable[[dict[str, Any]], torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``fn(inputs)`` as a function of keyword arguments, as run(...) is called."""
    return lambda **a: fn(a)


def score(task: Any, workload: Any, designs: dict[str, Callable[..., torch.Tensor]], calls: int, inputs: Any, ref: Any) -> None:
    tol = task.tolerance_for(workload)
    scale = task.spec.checks.input_scale
    worst = {name: [0.0, float("inf"), 0] for name in designs}  # max ratio, min ratio, failing calls
    start = time.time()
    n_calls = 0
    for seed in range(calls):
        made = inputs.make_inputs(workload.axes, seed, "cpu")
        batch = [made]
        if seed % 10 == 0 and scale:  # the harness's scaled call, on a tenth of the seeds
            batch.append({k: (v * scale if k in ("q", "k_cache", "v_cache") else v) for k, v in made.items()})
        for call in batch:
            n_calls += 1
            oracle = ref.exact(**call)
            for name, fn in designs.items():
                out = fn(**{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in call.items()})
                res = compare(out, oracle, tol)
                ratio = res.rel_err / (res.bound or tol.matrix_rel_fro or 1.0)
                entry = worst[name]
                entry[0] = max(entry[0], ratio)
                entry[1] = min(entry[1], ratio)
                entry[2] += int(ratio > 1)
    print(f"{workload.name} ({n_calls} calls, {time.time() - start:.0f} s): err / bound")
    for name, (hi, lo, failing) in worst.items():
        print(f"  {name:24s} max {hi:9.3g}  min {lo:9.3g}  failing calls {failing}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    parser.add_argument("--emulate", type=int, default=0, help="fresh calls per scaled-down registered shape (0: skip)")
    args = parser.parse_args()
    interpreter_fix.install()  # bf16 tl.dot under the interpreter, as the harness's solution process has it
    task = Catalog(REPO / "tasks", REPO / "guidance").task("paged_gqa_decode")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "paged_gqa_decode_naive.py", "_ff_naive")
    wrong = {name: keyword_call(fn) for name, fn in wrong_designs().items()}
    honest: dict[str, Callable[..., torch.Tensor]] = {"reference": ref.reference, "expert": expert.run, "naive": naive.run}
    for workload in task.spec.smoke_workloads:
        score(task, workload, {**honest, **wrong}, args.calls, inputs, ref)
    if args.emulate:
        for workload in task.spec.workloads:
            axes = dict(workload.axes)
            axes["L"] = 1024 if axes["L"] <= 8192 else 2048
            axes["B"] = min(axes["B"], 4)
            axes["NP"] = axes["B"] * axes["L"] // PAGE
            small = type(workload)(name=f"{workload.name}_as_L{axes['L']}_B{axes['B']}", axes=axes)
            score(task, small, {"reference": ref.reference, **wrong}, args.emulate, inputs, ref)


if __name__ == "__main__":
    main()
