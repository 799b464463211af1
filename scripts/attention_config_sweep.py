"""Sweep the launch configurations of the causal_attention_fwd and windowed_attention experts on a GPU.

On each task's largest registered workload, every configuration of a small grid is checked against the
current configuration's output (relative error < 1e-2) and timed with triton.testing.do_bench (L2
flushed, median); prints the table sorted by time with the fraction of the expert's floor. With
--write, the fastest correct configuration replaces the D = 128 entry of the expert's table in this
checkout (then `d2k-workbench bench tasks ...` measures it through the harness).
Usage (GPU): python3 scripts/attention_config_sweep.py [--write]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import triton  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.catalog.modules import import_file  # noqa: E402
from workbench.harness.devices import expert_floor_ms, peaks_for  # noqa: E402

GRID = [(128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 2), (128, 128, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3), (128, 32, 8, 4)]
CASES = {
    "causal_attention_fwd": ("b1_h32_s16384_d128", "H200_CONFIGS", "(16384, 128)"),
    "windowed_attention": ("b2_h32_s32768_d128_w4096", "GPU_CONFIGS", "128"),
}


def call(task_id: str, expert, d: dict, cfg) -> object:  # type: ignore[no-untyped-def]
    if task_id == "causal_attention_fwd":
        return expert.causal_attention(d["q"], d["k"], d["v"], d["scale"], cfg)
    return expert.windowed_attention(d["q"], d["k"], d["v"], d["cu_seqlens"], d["window"], cfg)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the fastest configuration into expert.py")
    args = parser.parse_args()
    import torch

    catalog = Catalog(REPO / "tasks", REPO / "guidance")
    peaks = peaks_for(torch.cuda.get_device_name())
    for task_id, (workload_name, table, key) in CASES.items():
        task = catalog.task(task_id)
        workload = task.workload(workload_name)
        expert = import_file(task.file("expert.py"), f"_sweep_{task_id}")
        inputs = import_file(task.file("inputs.py"), f"_sweep_{task_id}_inputs")
        d = inputs.make_inputs(workload.axes, 1, "cuda")
        floor = expert_floor_ms(peaks, task, workload) if peaks else float("nan")
        base = call(task_id, expert, d, expert.Config(*GRID[0])).float()  # type: ignore[attr-defined]
        rows = []
        for values in GRID:
            cfg = expert.Config(*values)
            try:
                out = call(task_id, expert, d, cfg).float()  # type: ignore[attr-defined]
                err = float((out - base).norm() / base.norm())
                ms = triton.testing.do_bench(lambda cfg=cfg: call(task_id, expert, d, cfg), warmup=10, rep=60)
            except Exception as exc:  # a configuration the compiler refuses
                print(f"  {task_id} {values}: {type(exc).__name__}: {str(exc)[:80]}", flush=True)
                continue
            rows.append((ms, values, err))
            print(f"  {task_id} {values}: {ms:.4f} ms ({floor / ms:.0%} of floor), vs current {err:.1e}", flush=True)
        rows.sort()
        best = next((r for r in rows if r[2] < 1e-2), None)
        print(f"{task_id} {workload_name}: floor {floor:.4f} ms; fastest correct {best}")
        if args.write and best is not None:
            path = task.file("expert.py")
            text = path.read_text()
            pattern = rf"(\n{table}[^\n]*\n(?:.*\n)*?\s*{re.escape(key)}: Config\()[^)]*(\))"
            new, count = re.subn(pattern, lambda m: m.group(1) + ", ".join(map(str, best[1])) + m.group(2), text, count=1)
            if count == 1:
                path.write_text(new)
                print(f"  wrote {best[1]} into {path.relative_to(REPO)}")


if __name__ == "__main__":
    main()
