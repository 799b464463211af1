"""How close do honest gated_deltanet designs come to the tolerance, and how far are wrong ones?

For fresh calls per smoke workload (the task's make_inputs; every tenth call also x2-scaled, as the harness
does), the worst matrix's err / bound over both outputs (o per [T, D], final_state per [D, D]) with the
harness's compare() against exact():

* honest: the reference (float32 chunked, the row loop), the expert and the naive recurrence under the
  interpreter (with the harness's interpreter fix);
* wrong (float64 torch, chunks of 16 tokens as the expert's under the interpreter, o rounded to bfloat16):
  beta applied to v only (the erasure I - k k^T unscaled), the decay applied only between chunks (none
  inside), the state not carried from chunk to chunk, the WY transform to first order ((I + A)^-1 taken as
  I - A), and the output's causal mask without its diagonal (o_t misses token t's own correction).

With --registered, the expert's roundings emulated in torch (bfloat16 k, q, T, W, U, chunk states, V' and
scores; float32 accumulation; chunks of 64) on four heads of each registered shape, plain and x2-scaled: the
interpreter cannot run those sizes on a CPU.

Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/gated_deltanet_false_failure.py --calls 100 [--registered]
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

Design = Callable[[Any, dict[str, Any]], tuple[torch.Tensor, torch.Tensor]]
CHUNK = 16


def chunked(ref: Any, made: dict[str, Any], **flaw: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The chunked form in float64 with one flaw switched on (see the module's docstring)."""
    q, k, v, g, beta = (made[n] for n in ("q", "k", "v", "g", "beta"))
    B, H, T, D = q.shape
    qn, kn = ref._l2norm(q.double()) * D**-0.5, ref._l2norm(k.double())
    vv, gg, bb = v.double(), g.double(), beta.double()
    state = torch.zeros((B, H, D, D), dtype=torch.float64)
    o = torch.empty((B, H, T, D), dtype=torch.float64)
    for start in range(0, T, CHUNK):
        part = slice(start, min(T, start + CHUNK))
        n = part.stop - part.start
        q_c, k_c, v_c, g_c, b_c = qn[:, :, part], kn[:, :, part], vv[:, :, part], gg[:, :, part].cumsum(-1), bb[:, :, part]
        if flaw.get("no_carry"):
            state = torch.zeros_like(state)
        if flaw.get("no_intra_decay"):  # the chunk's whole decay applied to the entering state, none inside
            state = state * g_c[..., -1:].exp().unsqueeze(-1)
            g_c = torch.zeros_like(g_c)
        last = g_c[..., -1:]
        keep = torch.ones((n, n), dtype=torch.bool).tril(-1 if flaw.get("strict_output") else 0)
        decay = (g_c.unsqueeze(-1) - g_c.unsqueeze(-2)).masked_fill(~keep, float("-inf")).exp()
        k_w = k_c if flaw.get("beta_on_v_only") else k_c * b_c.unsqueeze(-1)
        a = ((k_w @ k_c.transpose(-1, -2)) * (g_c.unsqueeze(-1) - g_c.unsqueeze(-2)).exp()).tril(-1)
        eye = torch.eye(n, dtype=torch.float64)
        t = eye - a if flaw.get("first_order") else torch.linalg.inv(eye + a)
        v_new = t @ (v_c * b_c.unsqueeze(-1)) - (t @ (k_w * g_c.exp().unsqueeze(-1))) @ state
        o[:, :, part] = (q_c * g_c.exp().unsqueeze(-1)) @ state + ((q_c @ k_c.transpose(-1, -2)) * decay) @ v_new
        state = state * last.exp().unsqueeze(-1) + (k_c * (last - g_c).exp().unsqueeze(-1)).transpose(-1, -2) @ v_new
    return o.to(torch.bfloat16), state


def _bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).float()


def expert_numerics(ref: Any, made: dict[str, Any], chunk: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """The expert's dataflow in torch: float32 arithmetic, its operands rounded to bfloat16 where it rounds them."""
    q, k, v, g, beta = (made[n] for n in ("q", "k", "v", "g", "beta"))
    B, H, T, D = q.shape
    qn, kn = ref._l2norm(q.float()) * D**-0.5, ref._l2norm(k.float())
    state = torch.zeros((B, H, D, D))
    o = torch.empty((B, H, T, D))
    for start in range(0, T, chunk):
        part = slice(start, min(T, start + chunk))
        n = part.stop - part.start
        q_c, k_c, g_c, b_c = qn[:, :, part], kn[:, :, part], g[:, :, part].cumsum(-1), beta[:, :, part].float()
        diff = g_c.unsqueeze(-1) - g_c.unsqueeze(-2)
        lower = torch.ones((n, n), dtype=torch.bool).tril()
        strict = lower.tril(-1)
        a = b_c.unsqueeze(-1) * (_bf16(k_c) @ _bf16(k_c).transpose(-1, -2)) * diff.masked_fill(~strict, float("-inf")).exp()
        t = _bf16(torch.linalg.inv(torch.eye(n) + a))
        w = _bf16(t @ _bf16(k_c * (b_c * g_c.exp()).unsqueeze(-1)))
        u = _bf16(t @ _bf16(v[:, :, part].float() * b_c.unsqueeze(-1)))
        entering = _bf16(state)
        v_new = _bf16(u - w @ entering)
        scores = _bf16((_bf16(q_c) @ _bf16(k_c).transpose(-1, -2)) * diff.masked_fill(~lower, float("-inf")).exp())
        o[:, :, part] = _bf16(q_c * g_c.exp().unsqueeze(-1)) @ entering + scores @ v_new
        last = g_c[..., -1:]
        state = state * last.exp().unsqueeze(-1) + _bf16(k_c * (last - g_c).exp().unsqueeze(-1)).transpose(-1, -2) @ v_new
    return o.to(torch.bfloat16), state


def registered(task: Any, ref: Any, inputs: Any) -> None:
    """The emulated expert on four heads (of 16 or 32) of every registered shape, one batch, plain and x2."""
    torch.set_num_threads(os.cpu_count() or 1)
    for workload in task.spec.workloads:
        made = inputs.make_inputs({**workload.axes, "B": 1}, 3, "cpu")
        step = workload.axes["H"] // 4
        made = {n: x[:, ::step].contiguous() for n, x in made.items()}
        for scale in (1.0, 2.0):
            call = {n: x * scale for n, x in made.items()}
            bound = task.spec.tolerance.matrix_rel_fro or 1.0
            pairs = zip(expert_numerics(ref, call), ref.exact(**call), strict=True)
            o, state = (compare(out, want, task.spec.tolerance).rel_err / bound for out, want in pairs)
            print(f"{workload.name} (4 heads, x{scale:g}): emulated expert o {o:.3f}, final_state {state:.3f} of the bound")


WRONG: dict[str, Design] = {
    "beta_on_v_only": lambda ref, made: chunked(ref, made, beta_on_v_only=True),
    "decay_between_chunks_only": lambda ref, made: chunked(ref, made, no_intra_decay=True),
    "state_not_carried": lambda ref, made: chunked(ref, made, no_carry=True),
    "wy_first_order": lambda ref, made: chunked(ref, made, first_order=True),
    "output_strictly_causal": lambda ref, made: chunked(ref, made, strict_output=True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per smoke workload")
    parser.add_argument("--registered", action="store_true", help="the emulated expert on the registered shapes only")
    args = parser.parse_args()
    interpreter_fix.install()
    task = Catalog(REPO / "tasks", REPO / "guidance").task("gated_deltanet")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    if args.registered:
        registered(task, ref, inputs)
        return
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "gated_deltanet_naive.py", "_ff_naive")
    designs: dict[str, Design] = {
        "reference": lambda r, m: r.reference(**m),
        "expert": lambda r, m: expert.run(**m),
        "naive": lambda r, m: naive.run(**m),
        **WRONG,
    }
    rule = task.spec.tolerance
    names = ("o", "final_state")
    for workload in task.spec.smoke_workloads:
        ratios: dict[str, dict[str, list[float]]] = {d: {n: [] for n in names} for d in designs}
        started = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, "cpu")
            scaled = {k: v * 2.0 for k, v in made.items()}
            for call in [made, scaled] if seed % 10 == 0 else [made]:
                want = ref.exact(**call)
                for name, design in designs.items():
                    got = design(ref, call)
                    for out, oracle, output in zip(got, want, names, strict=True):
                        result = compare(out, oracle, rule.rule_for(output))
                        ratios[name][output].append(result.rel_err / (result.bound or rule.matrix_rel_fro or 1.0))
        calls = len(ratios["expert"]["o"])
        print(f"{workload.name}: {calls} calls in {time.time() - started:.0f} s, worst matrix err / bound (o | final_state)")
        for name, per_output in ratios.items():
            worst = [max(a, b) for a, b in zip(*per_output.values(), strict=True)]
            cells = "  ".join(f"{min(v):7.3g}-{max(v):<7.3g}" for v in per_output.values())
            print(f"  {name:26s} {cells}  failing {sum(w > 1 for w in worst)}")


if __name__ == "__main__":
    main()
