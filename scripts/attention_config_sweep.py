"""Sweep the launch configurations of the attention experts on a GPU.

For each task (causal_attention_fwd, causal_attention_bwd, windowed_attention, mla_decode), on the
workloads named below, every configuration of a small grid is checked against the first configuration's
output (relative Frobenius error < 1e-2 on every output) and timed with triton.testing.do_bench (L2
flushed between calls, median); prints, per workload, the table sorted by time with the fraction of the
expert's floor (the harness's `min_flops` / `bytes` at the device's peaks). The expert's own config
tables are edited by hand from the result; `d2k-workbench bench tasks ...` then measures it through
the harness.
Usage (GPU): python3 scripts/attention_config_sweep.py [TASK ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import triton  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.protocol.devices import expert_floor_ms, peaks_for  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402

Inputs = dict[str, Any]
Call = Callable[[], Any]

FWD_GRID = [(128, 64, 8, 3), (128, 128, 8, 3), (128, 128, 8, 4), (128, 64, 8, 4), (64, 64, 4, 3), (64, 128, 4, 3)]
# causal_attention_bwd: the first entry of each list is held while the other list is swept
BWD_DKDV = [(64, 64, 4, 2), (64, 64, 4, 3), (64, 64, 8, 2), (64, 32, 4, 2), (128, 64, 8, 2), (128, 64, 8, 3)]
BWD_DQ = [(128, 64, 8, 3), (128, 64, 8, 2), (128, 64, 8, 4), (128, 128, 8, 2), (64, 64, 4, 3)]
# mla_decode: (block_h, block_n, warps, stages, wave factor: splits fill this many waves of programs)
MLA_GRID = [
    (64, 32, 8, 2, 1), (64, 32, 8, 2, 2), (64, 32, 8, 3, 1), (64, 64, 8, 2, 1), (64, 64, 8, 2, 2),
    (64, 64, 8, 1, 1), (64, 32, 4, 2, 1), (64, 16, 4, 3, 1), (64, 16, 8, 3, 2), (32, 32, 4, 2, 2),
    (64, 32, 8, 2, 4), (64, 64, 8, 1, 4), (64, 128, 8, 1, 1), (64, 64, 16, 2, 1), (64, 128, 16, 1, 1),
    (64, 32, 16, 3, 1),
]  # fmt: skip
CASES = {
    "causal_attention_fwd": ["b1_h32_s16384_d128", "b2_hq64_hkv8_s8192_d128"],
    "windowed_attention": ["b2_h32_s32768_d128_w4096"],
    "causal_attention_bwd": ["b4_h32_s4096_d128", "b1_h32_s8192_d128"],
    "mla_decode": ["b16_l32768", "b64_l4096", "b128_l1024"],
}


def candidates(task_id: str, expert: ModuleType, d: Inputs) -> Iterator[tuple[str, Call]]:
    """(label, call) per configuration of the task's grid."""
    if task_id == "causal_attention_fwd":
        for v in FWD_GRID:
            cfg = expert.Config(*v)
            yield str(v), lambda cfg=cfg: expert.causal_attention(d["q"], d["k"], d["v"], d["scale"], cfg)
    elif task_id == "windowed_attention":
        for v in FWD_GRID:
            cfg = expert.Config(*v)
            yield str(v), lambda cfg=cfg: expert.windowed_attention(d["q"], d["k"], d["v"], d["cu_seqlens"], d["window"], cfg)
    elif task_id == "causal_attention_bwd":
        args = (d["q"], d["k"], d["v"], d["o"], d["do"], d["lse"], d["scale"])
        pairs = [(a, BWD_DQ[0]) for a in BWD_DKDV] + [(BWD_DKDV[0], b) for b in BWD_DQ[1:]]
        for a, b in pairs:
            cfg = expert.Config(*a, *b, 64)
            yield f"dkdv {a} dq {b}", lambda cfg=cfg: expert.attention_bwd(*args, cfg)
    elif task_id == "mla_decode":
        import torch

        B, H, _ = d["q_nope"].shape
        L = d["kv_c"].shape[1]
        sms = expert.sm_count(torch.device("cuda"))
        args = [d[k] for k in ("q_nope", "q_pe", "kv_c", "k_pe", "w_uk", "w_uv")]
        for bh, bn, w, st, waves in MLA_GRID:
            splits, split_len = expert.num_splits(B, L, triton.cdiv(H, bh), bn, sms * waves)
            base = expert.config_for(B, L, H, sms)
            shape = dict(block_h=bh, block_n=bn, num_warps=w, num_stages=st, splits=splits, split_len=split_len)
            cfg = dataclasses.replace(base, **shape)
            yield f"{(bh, bn, w, st)} splits {splits}", lambda cfg=cfg: expert.mla_decode(*args, cfg)


def as_list(out: Any) -> list[Any]:
    return [t.float() for t in (out if isinstance(out, (tuple, list)) else [out])]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tasks", nargs="*", default=list(CASES), help="tasks to sweep (default: all four)")
    parser.add_argument(
        "--compare", action="append", default=[], metavar="TASK=PATH",
        help="also sweep another version of TASK's expert (e.g. the last commit's), in the same run",
    )  # fmt: skip
    args = parser.parse_args()
    others: dict[str, list[Path]] = {}
    for item in args.compare:
        task_id, sep, path = item.partition("=")
        if not sep or task_id not in CASES or not Path(path).is_file():
            parser.error(f"--compare wants TASK=PATH with TASK in {sorted(CASES)} and an existing file, got {item!r}")
        others.setdefault(task_id, []).append(Path(path))
    import torch

    catalog = Catalog(REPO / "tasks", REPO / "guidance")
    peaks = peaks_for(torch.cuda.get_device_name())
    for task_id in args.tasks:
        task = catalog.task(task_id)
        versions = [("", import_file(task.file("expert.py"), f"_sweep_{task_id}"))]
        versions += [(f"[{p.name}] ", import_file(p, f"_sweep_{task_id}_{i}")) for i, p in enumerate(others.get(task_id, []))]
        inputs = import_file(task.file("inputs.py"), f"_sweep_{task_id}_inputs")
        for workload_name in CASES[task_id]:
            workload = task.workload(workload_name)
            d = inputs.make_inputs(workload.axes, 1, "cuda")
            floor = expert_floor_ms(peaks, task, workload) if peaks else float("nan")
            base: list[Any] | None = None
            rows = []
            runs = [(prefix + label, fn) for prefix, expert in versions for label, fn in candidates(task_id, expert, d)]
            for label, fn in runs:
                try:
                    out = as_list(fn())
                    base = base or out
                    err = max(float((o - b).norm() / b.norm()) for o, b in zip(out, base, strict=True))
                    ms = triton.testing.do_bench(fn, warmup=10, rep=60)
                except Exception as exc:  # a configuration the compiler refuses
                    print(f"  {task_id} {label}: {type(exc).__name__}: {str(exc)[:80]}", flush=True)
                    continue
                rows.append((ms, label, err))
                print(f"  {task_id} {workload_name} {label}: {ms:.4f} ms ({floor / ms:.0%} of floor) err {err:.1e}", flush=True)
            rows.sort()
            print(f"== {task_id} {workload_name}: floor {floor:.4f} ms")
            for ms, label, err in rows[:4]:
                print(f"   {ms:.4f} ms {floor / ms:6.1%} {'ok ' if err < 1e-2 else 'BAD'} {label}")
            del d
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
