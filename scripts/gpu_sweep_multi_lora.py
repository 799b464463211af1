"""H200 sweep of multi_lora's expert configs: correctness against the float64 oracle, then the median latency of
each candidate (CUDA events, L2 flushed by a 256 MB write before each call), capped at 60 s per workload.

Run on the GPU machine from the repository root: ``python3 scripts/gpu_sweep_multi_lora.py``.
"""

from __future__ import annotations

import itertools
import time
import tomllib
from pathlib import Path

import torch
from gpu_timing import median_ms

from workbench.harness.protocol.task_files import import_file

TASK = Path("tasks/multi_lora")
ref = import_file(TASK / "reference.py", "_sweep_ml_reference")
inp = import_file(TASK / "inputs.py", "_sweep_ml_inputs")
ex = import_file(TASK / "expert.py", "_sweep_ml_expert")
C = ex.Config
CANDIDATES = {
    "t4096_a8_r16": [C(bm, 128, bn, 1, nw, cb) for bn, cb, bm, nw in itertools.product((256, 128), (2, 4, 1), (32, 64), (4, 8))],
    "decode_t256_a64_r64": [
        C(16, bk, bn, sk, 4, cb) for bk, bn, sk, cb in itertools.product((128, 256), (64, 128), (2, 4), (1, 4))
    ],
    "qkv_t2048_a4_r128": [
        C(bm, 128, bn, 1, nw, cb) for bn, cb, bm, nw in itertools.product((256, 128), (2, 4, 8), (32, 64, 128), (8, 4))
    ],
}


def main() -> None:
    for workload in tomllib.loads((TASK / "task.toml").read_text())["workloads"]:
        name, axes = workload["name"], workload["axes"]
        key = tuple(axes[k] for k in ("T", "H", "S", "A", "R", "N", "NSEG"))
        made = inp.make_inputs(axes, 5, "cuda")
        want = ref.exact(**made)
        current = ex.config_for(*key, torch.device("cuda"))
        started, rows = time.time(), []
        for cfg in [current, *CANDIDATES[name]]:
            ex.H200_CONFIGS[key] = cfg
            try:
                err = ((ex.run(**made).double() - want).norm() / want.norm()).item()
                rows.append((median_ms(lambda: ex.run(**made), calls=25), err, cfg))
            except Exception as exc:  # a config that does not compile (shared memory, registers)
                print(name, cfg, "failed:", type(exc).__name__, str(exc)[:100])
            if time.time() - started > 60:
                print("  (time cap)")
                break
        ex.H200_CONFIGS[key] = current
        reference_ms = median_ms(lambda: ref.reference(**made), calls=10)
        now = next(r for r in rows if r[2] == current)[0]
        print(f"{name}: reference {reference_ms:.3f} ms; current {current} {now * 1e3:.1f} us; {len(rows)} configs")
        for ms, err, cfg in sorted(rows, key=lambda r: r[0])[:5]:
            print(f"   {ms * 1e3:7.1f} us  err {err:.2e}  {cfg}")


if __name__ == "__main__":
    main()
