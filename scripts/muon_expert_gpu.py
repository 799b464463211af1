"""Check and time the expert ``muon_orthogonalize`` solution.

GPU (H200) usage::

    PYTHONUNBUFFERED=1 python scripts/muon_expert_gpu.py [--sweep] [--reps 10] [--workloads 0,1,2]

prints, per registered workload, the correctness of ``expert.run`` against the
float64 iteration (two matrices of the batch: first and last), then the
reference and expert latency (CUDA events, warm-up, 256 MB L2 flush before
every call, median of ``--reps``), speedup and TFLOP/s.  ``--sweep`` first
times candidate tile configurations of each kernel kind in isolation and then
also times the full solution with the best per-kind choice; ``--variants``
instead checks and times ``run()`` and a few whole-call config variants in
place (the final numbers in docs/notes/muon-expert.md come from it);
``--profile`` adds per-kernel times of one call.  ``--dry`` rehearses the GPU
code path on CPU under the interpreter with tiny shapes.

CPU usage (Triton interpreter)::

    python scripts/muon_expert_gpu.py --cpu

runs the smoke workloads plus a tile-aligned shape and a ragged one, checking
against float64 and printing wall time.  Needs only torch, triton and numpy.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tasks" / "muon_orthogonalize"

WORKLOADS = [(32, 2048, 5464), (32, 4096, 11008), (8, 7168, 18432)]
SMOKE = [(2, 32, 80), (1, 48, 160), (1, 128, 328), (1, 64, 256)]


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def rel_err(y, e):
    y, e = y.double().flatten(1), e.double().flatten(1)
    return ((y - e).norm(dim=1) / e.norm(dim=1)).tolist()


def check(expert, ref, G, rows, fn=None):
    """Errors of expert and reference vs float64 on the selected matrices.

    ``fn(G)`` defaults to ``expert.run(G, 5)``; a list of functions returns a list of results.
    """
    import torch

    fns = fn if isinstance(fn, list) else [fn or (lambda g: expert.run(g, 5))]
    sub = G[rows].contiguous()
    exact = ref.exact(sub, 5)
    e_ref = rel_err(ref.reference(sub, 5), exact)
    results = []
    for f in fns:
        try:
            out = f(G)
        except Exception as exc:
            print(f"  FAILED {type(exc).__name__}: {exc}"[:400])
            results.append((False, False, [float("nan")], e_ref))
            continue
        assert out.dtype == torch.float16 and out.shape == G.shape and out.is_contiguous()
        finite = bool(torch.isfinite(out).all())
        e_exp = rel_err(out[rows], exact)
        del out
        ok = finite and all(x <= max(2e-2, 2 * r) for x, r in zip(e_exp, e_ref))
        results.append((ok, finite, e_exp, e_ref))
    return results if isinstance(fn, list) else results[0]


def flops(M, N, block=128):
    """(reference FLOPs, expert executed FLOPs) per matrix."""
    ref = 5 * (4 * M * M * N + 2 * M**3)
    t = -(-M // block)
    tri = t * (t + 1) // 2 * block * block  # output elements computed by a triangle kernel
    exp = 2 * (2 * tri * N) + 2 * (2 * M * M * N) + 14 * (2 * tri * M)
    return ref, exp


def cpu_main():
    os.environ["TRITON_INTERPRET"] = "1"
    import torch

    ref = _import(TASK / "reference.py", "muon_reference")
    expert = _import(TASK / "expert.py", "muon_expert")
    torch.manual_seed(0)
    all_ok = True
    for shape in SMOKE:
        G = torch.randn(*shape).bfloat16()
        t0 = time.perf_counter()
        ok, finite, e_exp, e_ref = check(expert, ref, G, list(range(shape[0])))
        dt = time.perf_counter() - t0
        all_ok &= ok
        print(
            f"{shape!s:18s} ok={ok} finite={finite} err={[f'{x:.2e}' for x in e_exp]} "
            f"ref_err={[f'{x:.2e}' for x in e_ref]} time={dt:.2f}s"
        )
    try:
        expert.run(torch.randn(1, 8, 16).bfloat16(), 4)
        print("steps=4 accepted: FAIL")
        all_ok = False
    except ValueError:
        print("steps=4 -> ValueError: ok")
    print("ALL OK" if all_ok else "FAILED")
    return 0 if all_ok else 1


def gpu_main(args):
    import torch

    ref = _import(TASK / "reference.py", "muon_reference")
    expert = _import(TASK / "expert.py", "muon_expert")
    dry = args.dry  # CPU interpreter rehearsal of this code path on tiny shapes
    dev = "cpu" if dry else "cuda"
    workloads = [(2, 128, 328), (1, 256, 520)] if dry else WORKLOADS
    print(
        "dry run" if dry else torch.cuda.get_device_name(), "torch", torch.__version__, "triton", __import__("triton").__version__
    )
    flush = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device=dev)

    def bench(fn, reps=args.reps, warmup=2):
        if dry:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        for _ in range(warmup):
            fn()
        ts = []
        for _ in range(reps):
            flush.zero_()
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        return statistics.median(ts)

    # Dense fp16 / bf16 matmul rate of this GPU.
    for dt in () if dry or args.variants else (torch.float16, torch.bfloat16):
        a = torch.randn(8192, 8192, device=dev, dtype=dt)
        b = torch.randn(8192, 8192, device=dev, dtype=dt)
        ms = bench(lambda: a @ b, reps=10)
        print(f"torch {dt} 8192^3: {ms:.3f} ms, {2 * 8192**3 / ms / 1e9:.0f} TFLOP/s")
        del a, b

    SC, AC = expert.SymConfig, expert.ApplyConfig
    sym_cands = [
        SC(128, 128, 64, 8, 4),
        SC(128, 128, 64, 4, 4),
        SC(256, 128, 64, 8, 3),
        SC(256, 128, 64, 8, 4),
        SC(256, 128, 32, 8, 5),
    ]
    app_cands = [AC(128, 256, 64, 8, 3, 8), AC(128, 256, 64, 8, 4, 8), AC(256, 128, 64, 8, 3, 8), AC(256, 128, 64, 8, 4, 8)]
    if dry:
        sym_cands = [SC(64, 64, 64, 4, 1), SC(128, 64, 64, 4, 1)]
        app_cands = [AC(64, 128, 64, 4, 1, 8), AC(128, 128, 64, 4, 1, 2)]
    wl_idx = [int(x) for x in args.workloads.split(",")][: len(workloads)]
    summary = []
    for wi in wl_idx:
        B, M, N = workloads[wi]
        print(f"\n=== workload {(B, M, N)} ===")
        torch.manual_seed(wi)
        G = torch.randn(B, M, N, device=dev).bfloat16()
        fr, fe = flops(M, N)
        cfg = expert.config_for(M, N)
        print("config:", cfg)
        if args.sweep:
            try:
                ldx = expert.padded(N)
                x0 = torch.empty(B, M, ldx, device=dev, dtype=torch.float16)
                x1 = torch.empty_like(x0)
                y = torch.empty(B, M, N, device=dev, dtype=torch.float16)
                R = torch.empty(B, M, M, device=dev, dtype=torch.float16)
                Z = torch.empty_like(R)
                expert._normalise(G, x0, expert._DEFAULT.reduce_block)
                expert._launch_sym(x0, None, R, expert._DEFAULT.gram, gram=True)
                t = -(-M // 128)
                tri = t * (t + 1) // 2 * 128 * 128  # useful triangle (128 blocks)
                best = {}
                for kind, cands in (("gram", sym_cands), ("square", sym_cands), ("apply", app_cands)):
                    for c in cands:
                        try:
                            if kind == "gram":
                                fn = lambda c=c: expert._launch_sym(x0, None, Z, c, gram=True)
                                f = 2 * tri * ldx
                            elif kind == "square":
                                fn = lambda c=c: expert._launch_sym(R, R, Z, c, d=R, alpha=0.5, beta=-1.0)
                                f = 2 * tri * M
                            else:
                                fn = lambda c=c: (expert._launch_apply(R, x0, x1, ldx, c), expert._launch_apply(R, x1, y, N, c))[
                                    1
                                ]
                                f = 2 * 2 * M * M * N  # restart + final commit
                            k = fn()
                            ms = bench(fn, reps=5)
                            tf = B * f / ms / 1e9
                            ptx = getattr(k, "asm", {}).get("ptx", "")
                            print(
                                f"  {kind:6s} {c}: {ms:8.3f} ms {tf:6.0f} TFLOP/s(exec) "
                                f"regs={getattr(k, 'n_regs', '-')} spills={getattr(k, 'n_spills', '-')} "
                                f"wgmma={'wgmma' in ptx}"
                            )
                            if kind not in best or ms < best[kind][0]:
                                best[kind] = (ms, c)
                        except Exception as exc:
                            print(f"  {kind:6s} {c}: FAILED {type(exc).__name__}: {exc}"[:300])
                del x0, x1, R, Z, y
                cfg = expert.Config(
                    gram=best["gram"][1],
                    square=best["square"][1],
                    apply=best["apply"][1],
                    reduce_block=expert._DEFAULT.reduce_block,
                )
                print("best:", cfg)
            except Exception:
                traceback.print_exc()
        torch.cuda.empty_cache()
        if args.variants:
            variants_main(args, expert, ref, G, bench, summary, dry)
            del G
            continue
        run = lambda: expert.orthogonalize(G, cfg)
        try:
            rows = [0, B - 1]
            (ok, finite, e_exp, e_ref), (ok_cfg, _, e_cfg, _) = check(
                expert, ref, G, rows, [lambda g: expert.run(g, 5), lambda g: expert.orthogonalize(g, cfg)]
            )
            print(
                f"correct run(): {ok} finite={finite} err={[f'{x:.3e}' for x in e_exp]} "
                f"ref_err={[f'{x:.3e}' for x in e_ref]}; chosen cfg: {ok_cfg} "
                f"err={[f'{x:.3e}' for x in e_cfg]}"
            )
        except Exception:
            traceback.print_exc()
            ok = ok_cfg = False
        torch.cuda.empty_cache()
        t_ref = bench(lambda: ref.reference(G, 5))
        t_run = bench(lambda: expert.run(G, 5))
        t_cfg = bench(run) if args.sweep else t_run
        for name, t in (("run()", t_run), ("chosen", t_cfg)):
            print(
                f"{name:7s} ref {t_ref:9.3f} ms  expert {t:9.3f} ms  speedup {t_ref / t:5.2f}x  "
                f"ref {B * fr / t_ref / 1e9:5.0f} TF/s  expert exec {B * fe / t / 1e9:5.0f} TF/s  "
                f"ref-equiv {B * fr / t / 1e9:5.0f} TF/s"
            )
        summary.append(((B, M, N), t_ref, t_run, t_cfg, ok, ok_cfg))
        if args.profile and not dry:
            try:
                from torch.profiler import ProfilerActivity, profile

                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    run()
                    torch.cuda.synchronize()
                tot = {}
                for ev in prof.events():
                    if ev.device_type.name == "CUDA":
                        k = ev.name.split("_kernel")[0][:24]
                        n, d = tot.get(k, (0, 0.0))
                        tot[k] = (n + 1, d + ev.time_range.elapsed_us() / 1e3)
                print(
                    "profile (kernel: launches, ms):",
                    {k: (n, round(d, 3)) for k, (n, d) in tot.items()},
                    "sum %.3f ms" % sum(d for _, d in tot.values()),
                )
            except Exception:
                traceback.print_exc()
        del G
        torch.cuda.empty_cache()
    if args.variants:
        print("\nworkload              variant   ref_ms  expert_ms  speedup  ok")
        for row in summary:
            print(*row)
        return
    print("\nworkload              ref_ms   run_ms  chosen_ms  speedup(run)  speedup(chosen) ok")
    for shp, tr, t1, t2, ok, ok2 in summary:
        print(f"{shp!s:20s} {tr:8.3f} {t1:8.3f} {t2:9.3f} {tr / t1:12.2f} {tr / t2:15.2f} {ok}/{ok2}")


def variant_configs(expert, M, N):
    """Full-run candidates around the shape's fixed config (timed in place, not in isolation)."""
    import dataclasses

    base = expert.config_for(M, N)
    SC, AC = expert.SymConfig, expert.ApplyConfig
    out = {}
    for name, kw in (
        ("sq32", dict(square=SC(256, 128, 32, 8, 5))),
        ("sq64s3", dict(square=SC(256, 128, 64, 8, 3))),
        ("app256", dict(apply=AC(256, 128, 64, 8, 4, 8))),
    ):
        cfg = dataclasses.replace(base, **kw)
        if cfg != base:
            out[name] = cfg
    return out


def variants_main(args, expert, ref, G, bench, summary, dry):
    """Correctness + in-place timing of run() and of config variants (one exact per workload)."""
    import torch

    B, M, N = G.shape
    fr, fe = flops(M, N)
    vs = variant_configs(expert, M, N)
    names = ["run()"] + list(vs)
    fns = [lambda g: expert.run(g, 5)] + [lambda g, c=c: expert.orthogonalize(g, c) for c in vs.values()]
    oks = {}
    try:
        res = check(expert, ref, G, [0, B - 1], fns)
        for name, (ok, finite, e_exp, e_ref) in zip(names, res):
            oks[name] = ok
            print(
                f"  {name:10s} correct={ok} finite={finite} err={[f'{x:.3e}' for x in e_exp]} "
                f"ref_err={[f'{x:.3e}' for x in e_ref]}"
            )
    except Exception:
        traceback.print_exc()
    torch.cuda.empty_cache()
    t_ref = bench(lambda: ref.reference(G, 5))
    print(f"  reference {t_ref:9.3f} ms  {B * fr / t_ref / 1e9:5.0f} TFLOP/s")
    for name, fn in zip(names, fns):
        if name != "run()" and not oks.get(name, False):
            continue
        try:
            t = bench(lambda: fn(G))
        except Exception as exc:
            print(f"  {name:10s} FAILED {type(exc).__name__}: {exc}"[:400])
            continue
        print(
            f"  {name:10s} {t:9.3f} ms  speedup {t_ref / t:5.2f}x  design {B * fe / t / 1e9:5.0f} TF/s  "
            f"ref-equiv {B * fr / t / 1e9:5.0f} TF/s"
        )
        summary.append(
            (str((B, M, N)).ljust(20), name.ljust(9), f"{t_ref:8.3f}", f"{t:9.3f}", f"{t_ref / t:7.2f}", oks.get(name))
        )
    if not dry:
        torch.cuda.synchronize()
        hs = []
        for _ in range(5):
            t0 = time.perf_counter()
            expert.run(G, 5)
            hs.append((time.perf_counter() - t0) * 1e3)
            torch.cuda.synchronize()
        print(f"  host submit time of run(): median {statistics.median(hs):.3f} ms")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cpu", action="store_true", help="interpreter smoke check on CPU")
    p.add_argument("--sweep", action="store_true", help="time candidate tile configs first")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--workloads", default="0,1,2")
    p.add_argument("--dry", action="store_true", help="rehearse the GPU path on CPU (interpreter)")
    p.add_argument("--profile", action="store_true", help="per-kernel time of one call (torch.profiler)")
    p.add_argument("--variants", action="store_true", help="time run() and config variants in place")
    args = p.parse_args()
    if args.dry:
        os.environ["TRITON_INTERPRET"] = "1"
    if args.cpu:
        sys.exit(cpu_main())
    gpu_main(args)


if __name__ == "__main__":
    main()
