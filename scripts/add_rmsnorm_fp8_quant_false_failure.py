"""How close do honest add_rmsnorm_fp8_quant designs come to the tolerance, and how far are wrong ones?

For many fresh calls per workload (inputs from the task's make_inputs, plus the x1000-scaled call the
harness makes on a tenth of them), scores every compared value (the views y and y_groups of
reference.dequantized, and the state input residual) with the harness's compare() and the task's rules:

* honest: the eager reference (amax / 448 on bfloat16 values), the expert (power-of-two scales) and the
  naive two-kernel solution (amax / 448 by division; tests/solutions/add_rmsnorm_fp8_quant_naive.py),
  under the Triton interpreter on the CPU, compiled on a GPU; and two float32 torch emulations with
  torch's round-to-nearest FP8 cast (what a GPU's cast does), one per scale choice;
* wrong (emulated in torch, exactly the red-team cheats' math): scales stored column-major, x quantised
  instead of x + residual, the residual not written back, and the mean square taken over the padded
  power-of-two block.

Prints, per workload and design, the worst err / bound over the calls and compared values (honest must
stay below 1, wrong above it), the smallest, and the number of failing calls. With --time (GPU) it
also times the expert, the naive solution and the reference with CUDA-graph replay.
Usage: TRITON_INTERPRET=1 .venv/bin/python scripts/add_rmsnorm_fp8_quant_false_failure.py --calls 100
       python3 scripts/add_rmsnorm_fp8_quant_false_failure.py --device cuda --calls 20 --time
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

_device = argparse.ArgumentParser(add_help=False)
_device.add_argument("--device", default="cpu")
if _device.parse_known_args()[0].device == "cpu":  # the interpreter (read when triton is imported)
    os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import triton  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.catalog.task import CompareRule  # noqa: E402
from workbench.harness.checker.compare import compare  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402

Outputs = tuple[torch.Tensor, torch.Tensor]
GROUP = 128


def emulate(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    *,
    pow2: bool = False,
    quantise_x: bool = False,
    write_residual: bool = True,
    padded_mean: bool = False,
    transposed_scales: bool = False,
) -> Outputs:
    """The fused algorithm in float32 torch with torch's round-to-nearest FP8 cast, and the cheats' variants."""
    M, N = x.shape
    s = x.float() + residual.float()
    if write_residual:
        residual.copy_(s)
    divisor = triton.next_power_of_2(N) if padded_mean else N
    rstd = torch.rsqrt(s.square().sum(dim=1, keepdim=True) / divisor + eps)
    h = (x.float() if quantise_x else s) * rstd * weight.float()
    g = h.view(M, N // GROUP, GROUP)
    scale = g.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10) / 448.0
    if pow2:
        scale = torch.exp2(torch.ceil(torch.log2(scale)))
    y = (g / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(M, N)
    scales = scale.view(M, N // GROUP)
    if transposed_scales:  # element (row, group) stored at group * M + row of the row-major buffer
        scales = scales.t().contiguous().view(M, N // GROUP)
    return y, scales


def ratio(value: torch.Tensor, oracle: torch.Tensor, rule: CompareRule) -> float:
    """err / bound of one compared value under its rule (the worse of the per-matrix and elementwise parts)."""
    result = compare(value, oracle, rule)
    worst = 0.0
    if rule.matrix_rel_fro is not None:
        worst = result.rel_err / (result.bound or rule.matrix_rel_fro)
    if rule.atol is not None or rule.rtol is not None:
        diff = (value.double() - oracle.double()).abs()
        allowed = (rule.atol or 0.0) + (rule.rtol or 0.0) * oracle.double().abs()
        over = torch.where(allowed > 0, diff / allowed.clamp_min(1e-300), torch.where(diff > 0, float("inf"), 0.0))
        worst = max(worst, float(over.max()))
    if not result.ok and worst <= 1:
        worst = float("inf")  # NaN or Inf
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="fresh calls per workload")
    parser.add_argument("--device", default="cpu", help="cpu (smoke workloads, interpreter) or cuda (registered)")
    parser.add_argument("--time", action="store_true", help="on a GPU, also time expert, naive and reference")
    parser.add_argument("--workloads", nargs="*", help="workload names (default: all of the device's)")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1":
        from workbench.harness.solution import interpreter_fix

        interpreter_fix.install()  # the GPU's FP8 cast, as the harness gives the interpreter
    task = Catalog(REPO / "tasks", REPO / "guidance").task("add_rmsnorm_fp8_quant")
    ref = import_file(task.file("reference.py"), "_ff_reference")
    inputs = import_file(task.file("inputs.py"), "_ff_inputs")
    expert = import_file(task.file("expert.py"), "_ff_expert")
    naive = import_file(REPO / "tests" / "solutions" / "add_rmsnorm_fp8_quant_naive.py", "_ff_naive")
    designs: dict[str, Callable[..., Outputs]] = {
        "reference": ref.reference,
        "expert": expert.run,
        "naive": naive.run,
        "emulated_amax448": emulate,
        "emulated_pow2": lambda **a: emulate(**a, pow2=True),
        "cheat_transposed_scales": lambda **a: emulate(**a, transposed_scales=True),
        "cheat_quantise_x": lambda **a: emulate(**a, quantise_x=True),
        "cheat_residual_not_written": lambda **a: emulate(**a, write_residual=False),
        "cheat_padded_mean": lambda **a: emulate(**a, padded_mean=True),
    }
    workloads = task.spec.workloads if device.type == "cuda" else task.spec.smoke_workloads
    if args.workloads:
        workloads = [w for w in workloads if w.name in args.workloads]
    scale = task.spec.checks.input_scale
    for workload in workloads:
        tol = task.tolerance_for(workload)
        worst: dict[str, list[Any]] = {name: [0.0, float("inf"), 0, {}] for name in designs}
        start = time.time()
        for seed in range(args.calls):
            made = inputs.make_inputs(workload.axes, seed, device)
            calls = [made]
            if seed % 10 == 0 and scale:  # the harness's scaled call, on a tenth of the seeds
                calls.append({k: v * scale if isinstance(v, torch.Tensor) else v for k, v in made.items()})
            for call in calls:
                want_res = call["residual"].clone()
                exact = ref.exact(call["x"], want_res, call["weight"], call["eps"])
                want = ref.dequantized(dict(zip(("y", "scales"), exact, strict=True)), call)
                want["residual"] = want_res
                for name, fn in designs.items():
                    res = call["residual"].clone()
                    y, scales = fn(x=call["x"], residual=res, weight=call["weight"], eps=call["eps"])
                    try:
                        got = ref.dequantized({"y": y, "scales": scales}, call)
                    except ValueError:
                        got = {k: torch.full_like(v, float("nan")) for k, v in want.items() if k != "residual"}
                    got["residual"] = res
                    ratios = {k: ratio(got[k], want[k], tol.rule_for(k)) for k in want}
                    entry = worst[name]
                    entry[0] = max(entry[0], *ratios.values())
                    entry[1] = min(entry[1], max(ratios.values()))
                    entry[2] += int(max(ratios.values()) > 1)
                    for k, r in ratios.items():
                        entry[3][k] = max(entry[3].get(k, 0.0), r)
                del want
        calls_done = args.calls + (args.calls + 9) // 10
        print(f"{workload.name} ({calls_done} calls, {time.time() - start:.0f} s): err / bound")
        for name, (hi, lo, failing, per) in worst.items():
            detail = "  ".join(f"{k} {v:.3g}" for k, v in per.items())
            print(f"  {name:28s} max {hi:9.3g}  min {lo:9.3g}  failing calls {failing:4d}   ({detail})")
        if args.time and device.type == "cuda":
            time_designs(workload.axes, inputs, {"expert": expert.run, "naive": naive.run, "reference": ref.reference}, device)


def time_designs(axes: dict[str, int], inputs: Any, fns: dict[str, Callable[..., Outputs]], device: torch.device) -> None:
    """Median latency of each design with CUDA-graph replay and with plain launches (triton's do_bench)."""
    from triton.testing import do_bench, do_bench_cudagraph

    made = inputs.make_inputs(axes, 0, device)
    M, N = axes["M"], axes["N"]
    floor_bytes = 7 * M * N + 4 * M * (N // GROUP) + 2 * N
    for name, fn in fns.items():
        res = made["residual"].clone()

        def call(fn: Callable[..., Outputs] = fn, res: torch.Tensor = res) -> None:
            fn(made["x"], res, made["weight"], made["eps"])

        call()
        torch.cuda.synchronize()
        graph_ms = do_bench_cudagraph(call, rep=200)
        events_ms = do_bench(call, warmup=25, rep=200)
        tbs = floor_bytes / (graph_ms * 1e-3) / 1e12
        print(
            f"    time {name:10s} graph {graph_ms * 1e3:8.1f} us  events {events_ms * 1e3:8.1f} us  ({tbs:.2f} TB/s of the floor)"
        )


if __name__ == "__main__":
    main()
