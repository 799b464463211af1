"""H200 sweep for moe_grouped_gemm_bwd: check the expert against the reference, then time candidate configs.

Run from the repository root with the repository on PYTHONPATH: ``python3 scripts/gpu_sweep_moe_grouped_gemm_bwd.py``.
For each registered workload: inputs from the task's inputs.py, the expert's max error per output against
exact() (views as the harness compares them) next to the tolerance, then the median of 20 timed calls (CUDA
events, 3 warm-up calls, L2 flushed by writing a 256 MB buffer before each call) for the reference and for
each candidate Config; prints the best config per workload. About 1.5 minutes of GPU time in all (compilation included).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch

REPO = Path.cwd()
sys.path.insert(0, str(REPO))

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402

TASK = Catalog(REPO / "tasks", REPO / "guidance").task("moe_grouped_gemm_bwd")
ref = import_file(TASK.file("reference.py"), "_sweep_reference")
inputs = import_file(TASK.file("inputs.py"), "_sweep_inputs")
expert = import_file(TASK.file("expert.py"), "_sweep_expert")
Config = expert.Config

# (block_m, block_h, block_k, block_i, block_r, num_warps, num_stages, programs_per_sm)
CANDIDATES = [
    Config(128, 256, 64, 128, 64, 8, 4, 1),
    Config(128, 256, 64, 256, 64, 8, 3, 1),
    Config(256, 128, 64, 256, 64, 8, 3, 1),
    Config(128, 256, 64, 128, 32, 8, 4, 1),
    Config(128, 128, 64, 128, 64, 4, 4, 2),
]
FLUSH = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")


def timed(fn, made, reps: int = 20) -> float:  # type: ignore[no-untyped-def]
    for _ in range(3):
        fn(**made)
    times = []
    for _ in range(reps):
        FLUSH.fill_(1)  # evict L2
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(**made)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def errors(outputs, made, oracle) -> dict[str, float]:  # type: ignore[no-untyped-def]
    got = ref.per_token(dict(zip(("dx", "dw"), outputs, strict=True)), made)
    worst = {}
    for name in ("dx", "dw"):
        diff = (got[name].double() - oracle[name]).flatten(1).norm(dim=1)
        scale = oracle[name].flatten(1).norm(dim=1)
        worst[name] = float(torch.where(scale > 0, diff / scale.clamp_min(1e-300), diff).max())
    return worst


def main() -> None:
    bound = TASK.spec.tolerance.matrix_rel_fro
    rows = []
    for workload in [w for w in TASK.spec.workloads if len(sys.argv) < 2 or w.name in sys.argv[1:]]:
        axes = workload.axes
        key = tuple(axes[k] for k in ("T", "K", "E", "H", "I"))
        made = inputs.make_inputs(axes, 0, "cuda")
        oracle = ref.per_token(dict(zip(("dx", "dw"), ref.exact(**made), strict=True)), made)
        print(f"{workload.name}: expert err {errors(expert.run(**made), made, oracle)} "
              f"reference err {errors(ref.reference(**made), made, oracle)} bound {bound}")  # fmt: skip
        flops = TASK.min_flops(workload)
        ref_ms = timed(ref.reference, made)
        print(f"  reference {ref_ms:8.3f} ms  {flops / ref_ms / 1e9:7.1f} TFLOP/s")
        results = []
        for cfg in dict.fromkeys([expert.H200_CONFIGS[key], *CANDIDATES]):
            expert.H200_CONFIGS[key] = cfg
            try:
                ms = timed(expert.run, made)
            except Exception as exc:  # a config that does not compile (out of shared memory)
                print(f"  {cfg}: failed ({type(exc).__name__}: {str(exc)[:80]})")
                continue
            results.append((ms, cfg))
            print(f"  {cfg}  {ms:8.3f} ms  {flops / ms / 1e9:7.1f} TFLOP/s  speedup {ref_ms / ms:5.2f}")
        best_ms, best = min(results)
        expert.H200_CONFIGS[key] = best
        worst = errors(expert.run(**made), made, oracle)
        rows.append((workload.name, ref_ms, best_ms, best, worst))
        del made, oracle
        torch.cuda.empty_cache()
    print("\nworkload               reference ms  best ms  speedup  err(dx, dw)  best config")
    for name, ref_ms, best_ms, best, worst in rows:
        print(f"{name:22s} {ref_ms:12.3f} {best_ms:8.3f} {ref_ms / best_ms:8.2f}  "
              f"{worst['dx']:.1e},{worst['dw']:.1e}  {best}")  # fmt: skip


if __name__ == "__main__":
    main()
