#!/usr/bin/env bash
# fused_linear_ce on a GPU: expert, naive and cheats against the float64 oracle; memory; bench tasks.
# Usage on the GPU machine, from the repository root, with the wheels from scripts/fetch_device_wheels.sh in .whl/
# (and bubblewrap in .tools/): bash scripts/fused_linear_ce_gpu_check.sh   (writes reports under $OUT, default /tmp/gpu-out)
set -u
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=230
# (1) expert, naive and the red-team cheats against the float64 oracle on qwen_bt4096_d8192 and on a fresh ragged
# shape; the reference's error and its peak memory at the largest workload. Each line: err / bound per output
# (loss, dh, dW) with the harness's compare() and the task's rule (bound = max(fixed, 2 x the reference's error)).
timeout 240 python3 - <<'EOF'
import time
from pathlib import Path
import torch
from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path.cwd()
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("fused_linear_ce")
ref = import_file(TASK.file("reference.py"), "g_ref")
inputs = import_file(TASK.file("inputs.py"), "g_inputs")
expert = import_file(TASK.file("expert.py"), "g_expert")
NAIVE = REPO / "tests" / "solutions" / "fused_linear_ce_naive.py"
naive = import_file(NAIVE, "g_naive")
dev = torch.device("cuda")
print(torch.cuda.get_device_name(), "torch", torch.__version__)

def cheat(name):
    honest = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = Path("/tmp") / f"flce_{name}.py"
    path.write_text(honest + "\n\n" + (REPO / "tests/redteam/fused_linear_ce_cheats" / f"{name}.py").read_text())
    return import_file(path, f"g_cheat_{name}")

def timed(fn, made):
    torch.cuda.synchronize(); t0 = time.perf_counter(); out = fn(**made); torch.cuda.synchronize()
    return out, (time.perf_counter() - t0) * 1e3

def report(label, axes, seed, fns):
    made = inputs.make_inputs(axes, seed, dev)
    want, t_ex = timed(ref.exact, made)
    rout, t_ref = timed(ref.reference, made)
    rule = TASK.spec.tolerance
    e_ref = [compare(r, w, rule.rule_for(n)).rel_err for n, r, w in zip(("loss", "dh", "dW"), rout, want)]
    print(f"{label} {axes}: oracle {t_ex:.0f} ms, reference {t_ref:.0f} ms (first call), reference err "
          + " ".join(f"{e:.2e}" for e in e_ref))
    for name, fn in fns.items():
        try:
            out, ms = timed(fn, {k: v.clone() for k, v in made.items()})
            res = [compare(o, w, rule.rule_for(n), r) for n, o, w, r in zip(("loss", "dh", "dW"), out, want, rout)]
            print(f"  {name:24s} {ms:8.0f} ms  err " + " ".join(f"{x.rel_err:.2e}" for x in res)
                  + "  err/bound " + " ".join(f"{x.rel_err / x.bound:.3g}" for x in res) + ("  PASS" if all(x.ok for x in res) else "  FAIL"))
        except Exception as exc:
            print(f"  {name:24s} raised {type(exc).__name__}: {str(exc)[:200]}")
    del made, want, rout
    torch.cuda.empty_cache()

honest = {"expert": expert.run, "expert (warm)": expert.run, "naive": naive.run}
cheats = {n: cheat(n).run for n in ("ignored_rows_kept", "mean_over_all_tokens", "lse_bf16_state", "vocab_prefix", "dw_tail_rows_dropped")}
qwen = {w.name: w.axes for w in TASK.spec.workloads}["qwen_bt4096_d8192"]
report("registered", qwen, 11, {**honest, **cheats})
report("fresh ragged", {"BT": 1000, "D": 1536, "V": 50257}, 12, honest)
gemma = {w.name: w.axes for w in TASK.spec.workloads}["gemma_bt16384"]
made = inputs.make_inputs(gemma, 13, dev)
torch.cuda.synchronize(); base = torch.cuda.memory_allocated(); torch.cuda.reset_peak_memory_stats()
out, ms = timed(ref.reference, made)
print(f"reference at gemma_bt16384: {ms:.0f} ms (first call), peak {(torch.cuda.max_memory_allocated() - base) / 2**30:.1f} GiB above its inputs")
del out; torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
out, ms = timed(expert.run, made)
print(f"expert at gemma_bt16384: {ms:.0f} ms (first call, compiles), peak {(torch.cuda.max_memory_allocated() - base) / 2**30:.1f} GiB")
out, ms = timed(expert.run, made)
print(f"expert at gemma_bt16384: {ms:.0f} ms (second call)")
EOF
# (2) the harness's benchmark of the expert on the three registered workloads.
timeout 400 python3 -c 'from workbench.cli import main; main()' bench tasks fused_linear_ce --reports $OUT/reports 2>&1 | tail -30
