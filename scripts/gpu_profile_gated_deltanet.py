"""gated_deltanet on the GPU, pass by pass: the expert's three kernels timed one at a time (CUDA events, L2
flushed, median of 20) per registered workload, beside the whole call, fla's chunk_gated_delta_rule and the
error against exact(); optionally a second expert file (``--baseline``, e.g. an older version) timed the same
way in the same run, and a few alternative Configs of the expert (``--sweep``).

Run from the repository root on the GPU machine (fla-core from scripts/fetch_device_wheels.sh on PYTHONPATH):
    python3 scripts/gpu_profile_gated_deltanet.py [--baseline OLD_EXPERT.py] [--sweep]
On a CPU, `TRITON_INTERPRET=1 python3 scripts/gpu_profile_gated_deltanet.py --ir [--baseline OLD_EXPERT.py]`
compiles the passes for sm_90 and reports their registers, spills and programs an SM instead (no timing).
(the expert before 2026-12-06's change: git show ba85019:tasks/gated_deltanet/expert.py > OLD_EXPERT.py)
"""

from __future__ import annotations

import argparse
import importlib.util
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import triton
from gpu_timing import median_ms


def load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worst(out: torch.Tensor, want: torch.Tensor) -> float:
    """The worst per-matrix relative Frobenius error (the harness's measure)."""
    diff = (out.double() - want).flatten(-2).norm(dim=-1)
    return float((diff / want.flatten(-2).norm(dim=-1)).max())


def pass_launchers(ex: ModuleType, made: dict[str, torch.Tensor], cfg: Any) -> list[tuple[str, Callable[[], Any]]]:
    """The expert's three launches as separate callables (the buffers allocated once), for either the blocked
    expert (Config.block_k, decayed keys from the WY pass) or the earlier one (normalised rows in every pass)."""
    q, k, v, g, beta = (made[n] for n in ("q", "k", "v", "g", "beta"))
    B, H, T, D = q.shape
    nt = triton.cdiv(T, cfg.chunk)
    log_nb = (cfg.chunk // cfg.block).bit_length() - 1
    w, u, kd, v_new, o = (torch.empty_like(k) for _ in range(5))
    states = torch.empty((B, H, nt, D, D), dtype=torch.bfloat16, device=q.device)
    final = torch.empty((B, H, D, D), dtype=torch.float32, device=q.device)
    blocked = "block_k" in cfg._fields
    if blocked:
        wy_args: tuple[Any, ...] = (k, v, g, beta, w, u, kd, T)
        wy_kw: dict[str, Any] = {"BK": cfg.block_k}
        state_first = kd
        out_kw: dict[str, Any] = {"BK": cfg.block_k}
    else:
        wy_args, wy_kw, state_first, out_kw = (k, v, g, beta, w, u, T), {}, k, {}
    return [
        ("wy", lambda: ex._wy_kernel[(nt, B * H)](
            *wy_args, D=D, BT=cfg.chunk, BS=cfg.block, LOG_NB=log_nb, num_warps=cfg.wy_warps, **wy_kw)),
        ("state", lambda: ex._state_kernel[(D // cfg.state_block_v, B * H)](
            state_first, g, w, u, v_new, states, final, T, nt, D=D, BT=cfg.chunk, BV=cfg.state_block_v,
            num_warps=cfg.state_warps, num_stages=cfg.state_stages)),
        ("output", lambda: ex._output_kernel[(nt, B * H, D // cfg.out_block_v)](
            q, k, g, v_new, states, o, T, nt, D**-0.5, D=D, BT=cfg.chunk, BV=cfg.out_block_v,
            num_warps=cfg.out_warps, **out_kw)),
    ]  # fmt: skip


def profile(ex: ModuleType, label: str, made: dict[str, torch.Tensor], key: tuple[int, ...], want: Any, bound: float) -> float:
    cfg = ex.config_for(*key, torch.device("cuda"))
    o, s = ex.run(**made)
    err = max(worst(o, want[0]), worst(s, want[1]))
    whole = median_ms(lambda: ex.run(**made))
    parts = "  ".join(f"{name} {median_ms(fn) * 1e3:7.1f}" for name, fn in pass_launchers(ex, made, cfg))
    flag = "" if err <= bound else "  OVER THE BOUND"
    print(f"   {label:9s} {whole * 1e3:8.1f} us  ({parts} us)  err {err / bound:.2f} of bound  {cfg}{flag}")
    return whole


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", help="another expert file timed the same way (e.g. the previous version)")
    parser.add_argument("--sweep", action="store_true", help="also time alternative Configs of the expert")
    parser.add_argument(
        "--ir", action="store_true", help="no GPU: under TRITON_INTERPRET=1, each pass's registers, spills and programs an SM"
    )
    args = parser.parse_args()
    if args.ir:
        ir_report(args.baseline)
        return
    ref = load("tasks/gated_deltanet/reference.py", "gdn_reference")
    inp = load("tasks/gated_deltanet/inputs.py", "gdn_inputs")
    ex = load("tasks/gated_deltanet/expert.py", "gdn_expert")
    old = load(args.baseline, "gdn_baseline") if args.baseline else None
    spec = tomllib.loads(Path("tasks/gated_deltanet/task.toml").read_text())
    bound = spec["tolerance"]["matrix_rel_fro"]
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}; bound {bound:.0e}")
    for wl in spec["workloads"]:
        key = tuple(wl["axes"][a] for a in ("B", "H", "T", "D"))
        made = inp.make_inputs(wl["axes"], 7, "cuda")
        want = ref.exact(**made)
        print(f"{wl['name']}:")
        mine = profile(ex, "expert", made, key, want, bound)
        if old is not None:
            before = profile(old, "baseline", made, key, want, bound)
            print(f"   expert / baseline: {before / mine:.2f}x faster")
        try:
            lib_o, lib_s = ref.library(**made)
            lib_err = max(worst(lib_o, want[0]), worst(lib_s, want[1]))
            lib = median_ms(lambda made=made: ref.library(**made))
            print(f"   fla       {lib * 1e3:8.1f} us  err {lib_err / bound:.2f} of bound; expert vs fla {lib / mine:.2f}x")
        except ImportError as exc:
            print(f"   fla not importable: {exc}")
        if args.sweep:
            current, started = ex.config_for(*key, torch.device("cuda")), time.time()
            for cfg in sweep_configs(ex, key[3]):
                if cfg == current:
                    continue
                ex.H200_CONFIGS[key] = cfg
                try:
                    profile(ex, "candidate", made, key, want, bound)
                except Exception as exc:  # a config that does not compile (registers, shared memory)
                    print(f"   candidate FAILED {type(exc).__name__}: {str(exc)[:100]}  {cfg}")
                if time.time() - started > 40:
                    print("   (time cap)")
                    break
            ex.H200_CONFIGS[key] = current
        torch.cuda.empty_cache()


def ir_report(baseline: str | None) -> None:
    """Under TRITON_INTERPRET=1, on a CPU: the three passes at each registered workload's config (and the
    `baseline` expert's at its own), compiled for sm_90 and assembled by ptxas on a short sequence (T = 128,
    one head, the workload's D), one row a pass: loops, asynchronous copies, shared memory, registers a thread,
    bytes spilled, programs an SM (scripts/sm90_resources.py)."""
    from sm90_resources import HEADER, compile_reports

    reports = compile_reports()
    inp = load("tasks/gated_deltanet/inputs.py", "gdn_inputs")
    experts = [("expert", load("tasks/gated_deltanet/expert.py", "gdn_expert"))]
    if baseline:
        experts.append(("baseline", load(baseline, "gdn_baseline")))
    spec = tomllib.loads(Path("tasks/gated_deltanet/task.toml").read_text())
    print(HEADER)
    for wl in spec["workloads"]:
        key = tuple(wl["axes"][a] for a in ("B", "H", "T", "D"))
        made = inp.make_inputs({"B": 1, "H": 1, "T": 128, "D": key[3]}, 7, "cpu")
        for label, ex in experts:
            cfg = ex.H200_CONFIGS[key]
            print(f"{wl['name']}, {label}: {cfg}")
            for name, launch in pass_launchers(ex, made, cfg):
                before = len(reports)
                launch()
                print(reports[-1].row() if len(reports) > before else f"{name}: the same specialisation as above")
        ex = experts[0][1]
        cfg = ex.H200_CONFIGS[key]
        for warps, stages in ((4, 1), (4, 3), (8, 1), (8, 2)):  # the sequential pass at other depths and widths
            other = cfg._replace(state_warps=warps, state_stages=stages)
            launchers = dict(pass_launchers(ex, made, other))
            launchers["wy"]()  # the state pass's inputs (W, U, the decayed keys), already compiled at this config
            before = len(reports)
            launchers["state"]()
            if len(reports) > before:
                print(f"{reports[-1].row()}  (state pass, {warps} warps, {stages} stages)")


def sweep_configs(ex: ModuleType, D: int) -> list[Any]:
    C = ex.Config  # (chunk, block, block_k, state_block_v, out_block_v, wy_warps, state_warps, out_warps, stages)
    if D == 128:
        return [C(64, 16, 128, 16, 128, 4, 4, 4), C(64, 16, 64, 16, 128, 4, 4, 4), C(64, 16, 128, 16, 128, 4, 4, 4, 3),
                C(64, 16, 128, 16, 128, 4, 4, 4, 1), C(64, 16, 128, 16, 128, 4, 2, 4)]  # fmt: skip
    # first: the state pass at 1 stage (72 KB of shared memory, 2 programs an SM, against 176 KB and 1 at 2 stages:
    # --ir), with 4 and 8 warps; no result for the earlier sweep's 1-stage candidate is recorded
    return [C(64, 16, 128, 64, 128, 4, 4, 4, 1), C(64, 16, 128, 64, 128, 4, 8, 4, 1),
            C(64, 16, 128, 64, 128, 4, 4, 8), C(64, 16, 128, 64, 128, 4, 4, 4), C(64, 16, 128, 64, 256, 4, 4, 8),
            C(64, 16, 64, 64, 128, 4, 4, 8), C(64, 16, 128, 64, 128, 4, 8, 8), C(64, 16, 64, 64, 256, 4, 4, 8),
            C(64, 16, 128, 64, 128, 4, 4, 8, 1)]  # fmt: skip


if __name__ == "__main__":
    main()
