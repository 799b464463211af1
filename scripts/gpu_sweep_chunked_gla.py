"""GPU sweep for chunked_gla: per registered workload, the expert's worst compared matrix against exact()
(views = "steps": 16-step blocks of o, the final state per head), then the median latency of candidate
configs (CUDA events, warm-up, L2 flushed by a 256 MB write before every call) and of the reference.
Prints the best config per workload. About 3 minutes of GPU time (a cap per workload).

Run from the repository root: PYTHONPATH=$PWD python3 scripts/gpu_sweep_chunked_gla.py [--cap SECONDS] [WORKLOAD ...]
(default: all workloads, 20 s of sweeping per workload)
"""

import importlib.util
import itertools
import sys
import time
import tomllib
from pathlib import Path

import torch
from gpu_timing import median_ms

TASK = Path("tasks/chunked_gla")


def module(name):
    spec = importlib.util.spec_from_file_location(f"cg_{name}", TASK / f"{name}.py")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loaded  # the expert's dataclass looks its module up while it is being defined
    spec.loader.exec_module(loaded)
    return loaded


reference, inputs, expert = module("reference"), module("inputs"), module("expert")
spec = tomllib.loads((TASK / "task.toml").read_text())
bound = spec["tolerance"]["matrix_rel_fro"]


def worst(outputs, want, made):
    got = reference.steps({"o": outputs[0], "final_state": outputs[1]}, made)
    exact = reference.steps({"o": want[0], "final_state": want[1]}, made)
    errs = []
    for n in ("o", "final_state"):
        a, b = got[n].double().flatten(1), exact[n].double().flatten(1)
        errs.append(float(((a - b).norm(dim=1) / b.norm(dim=1)).max()))
    return max(errs)


C = expert.Config
args = sys.argv[1:]
CAP_S = float(args.pop(args.index("--cap") + 1)) if "--cap" in args else 20.0  # seconds of sweeping per workload
args = [a for a in args if a != "--cap"]
summary = []
for workload in [w for w in spec["workloads"] if not args or w["name"] in args]:
    name, axes = workload["name"], workload["axes"]
    B, H, T, D = (axes[a] for a in ("B", "H", "T", "D"))
    key = (B * H, T, D)
    made = inputs.make_inputs(axes, 7, "cuda")
    want = reference.exact(**made)
    scaled = {n: t * 1000.0 for n, t in made.items()}
    want_scaled = reference.exact(**scaled)
    ref_err = worst(reference.reference(**made), want, made)
    ref_ms = median_ms(lambda: reference.reference(**made), calls=5)
    lib_ms = median_ms(lambda: reference.library(**made))  # fla's chunk_simple_gla, in the same run
    current = expert.config_for(*key, interpret=False)
    candidates = [current] + [
        C(64, bv, w, 2, seg)
        for w, seg, bv in itertools.product((4, 8), (512, 1024, 2048, 256, 4096, 0), (16, 32, 64))
        if bv <= D and seg < T
    ]
    started, rows = time.time(), []
    for cfg in dict.fromkeys(candidates):
        expert.H200_CONFIGS[key] = cfg
        try:
            err = max(worst(expert.run(**made), want, made), worst(expert.run(**scaled), want_scaled, scaled))
            rows.append((median_ms(lambda: expert.run(**made)), err, cfg))
        except Exception as exc:  # a config that does not compile (shared memory, registers)
            print(f"{name}: {cfg} failed: {type(exc).__name__}: {str(exc)[:120]}")
        if time.time() - started > CAP_S:
            print(f"{name}: time cap after {len(rows)} configs")
            break
    expert.H200_CONFIGS[key] = current
    rows.sort(key=lambda r: r[0])
    print(f"\n{name} {axes}: reference {ref_ms:.3f} ms (worst matrix {ref_err:.2e}), library {lib_ms:.4f} ms")
    for ms, err, cfg in rows[:12]:
        mark = " <- current" if cfg == current else ""
        print(f"   {ms:8.4f} ms  worst {err:.2e} ({err / bound:.2f} of the bound, fresh and x1000)  {cfg}{mark}", flush=True)
    if rows:
        summary.append((name, rows[0][2], rows[0][0], ref_ms, max(r[1] for r in rows) / bound))
    del made, want, scaled, want_scaled
    torch.cuda.empty_cache()

print("\nbest config per workload (speedup over the reference; worst matrix over all configs / bound)")
for name, cfg, ms, ref_ms, w in summary:
    print(f"  {name:22s} {ms:8.4f} ms  x{ref_ms / ms:7.2f}  worst {w:.2f}  {cfg}")
