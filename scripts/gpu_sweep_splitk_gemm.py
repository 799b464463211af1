"""H200 sweep of splitk_gemm's expert configs (run from the repo root: python3 scripts/gpu_sweep_splitk_gemm.py [WORKLOAD...]).

Per registered workload: inputs from inputs.py, the expert (current config) against exact() and the reference
(error vs the task's bound; two calls bitwise equal), then the median latency of candidate Configs and of the
reference (cuBLAS) with CUDA events: 3 warm-up calls, median of 20, L2 flushed by writing 256 MB before each.
Prints the best configs per workload. About 55 s of GPU time per workload (capped)."""

import importlib.util
import itertools
import sys
import time
import tomllib
from pathlib import Path

import torch
from gpu_timing import median_ms

TASK = Path("tasks/splitk_gemm")
CAP_S = 55.0  # per workload


def load(name):
    spec = importlib.util.spec_from_file_location(f"sk_{name}", TASK / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref, inp, ex = load("reference"), load("inputs"), load("expert")


spec = tomllib.loads((TASK / "task.toml").read_text())
bound = spec["tolerance"]["matrix_rel_fro"]
C = ex.Config
wanted = sys.argv[1:]  # workload names (default: every registered workload)
for wl in spec["workloads"]:
    name, axes = wl["name"], wl["axes"]
    if wanted and name not in wanted:
        continue
    M, K, N = axes["M"], axes["K"], axes["N"]
    key = (M, K, N)
    made = inp.make_inputs(axes, 5, "cuda")
    want = ref.exact(**made)
    current = ex.config_for(M, K, N, torch.device("cuda"))
    try:
        got = ex.run(**made)
        err = ((got.double() - want).norm() / want.norm()).item()
        same = torch.equal(got.view(torch.int16), ex.run(**made).view(torch.int16))
    except Exception as exc:  # the current config does not compile or fit: the sweep still runs
        err, same = float("nan"), None
        print(f"  current {current} FAILED {type(exc).__name__}: {str(exc)[:100]}")
    ref_err = ((ref.reference(**made).double() - want).norm() / want.norm()).item()
    floor_us = (2 * M * K + 2 * N * K + 2 * M * N) / 4.8e12 * 1e6
    print(
        f"{name}: expert err {err:.2e} ({err / bound:.2f} of the bound {bound:g}), "
        f"reference err {ref_err:.2e}, bitwise repeat {same}"
    )
    bm = current.block_m
    cands = [current]
    for split, bn, (bk, stages), warps in itertools.product(
        (2, 3, 4, 1, 8), (128, 64, 256), ((128, 4), (64, 6), (256, 3)), (4, 8)
    ):
        if warps == 8 and bn < 128:
            continue
        cfg = C(bm, bn, bk, split, warps, stages)
        if cfg not in cands:
            cands.append(cfg)
    started, rows = time.time(), []
    for cfg in cands:
        if time.time() - started > CAP_S:
            print(f"  (time cap: {len(rows)} of {len(cands)} configs)")
            break
        ex.H200_CONFIGS[key] = cfg
        try:
            out = ex.run(**made)
            cerr = ((out.double() - want).norm() / want.norm()).item()
            rows.append((median_ms(lambda made=made: ex.run(**made)), cerr, cfg))
        except Exception as exc:  # a config that does not compile or fit
            print(f"  {cfg} FAILED {type(exc).__name__}: {str(exc)[:100]}")
    ex.H200_CONFIGS[key] = current
    rows.sort(key=lambda r: r[0])
    ref_ms = median_ms(lambda made=made: ref.reference(**made))
    cur = [r for r in rows if r[2] == current]
    print(
        f"  floor {floor_us:.1f} us; reference {ref_ms * 1e3:.1f} us; current {current} -> {cur[0][0] * 1e3:.1f} us"
        if cur
        else ""
    )
    for ms, cerr, cfg in rows[:5]:
        print(f"   {ms * 1e3:7.1f} us ({floor_us / (ms * 1e3):.2f} of floor, x{ref_ms / ms:.2f} vs ref)  err {cerr:.2e}  {cfg}")
    if rows:
        print(f"   best: {rows[0][2]}; worst {rows[-1][0] * 1e3:.1f} us; max err over configs {max(r[1] for r in rows):.2e}")
