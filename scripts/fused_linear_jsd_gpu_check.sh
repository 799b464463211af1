#!/usr/bin/env bash
# fused_linear_jsd on a GPU: errors against exact(), timings and memory per workload; bench tasks.
# Usage on the GPU machine, from the repository root, with the wheels from scripts/fetch_device_wheels.sh in .whl/
# (and bubblewrap in .tools/): bash scripts/fused_linear_jsd_gpu_check.sh   (writes reports under $OUT, default /tmp/gpu-out)
set -u
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=230
# fused_linear_jsd on an H100/H200. (1) expert and naive vs the float64 oracle on one registered workload and on
# fresh inputs (every beta branch), the reference's and the expert's peak memory at the largest workload, a quick
# CUDA-event timing of expert and reference on all three; (2) the harness's bench (correctness + timing + floors).
timeout 200 python3 - <<'PY'
import time, torch
from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file
task = Catalog(__import__("pathlib").Path("tasks"), __import__("pathlib").Path("guidance")).task("fused_linear_jsd")
ref = import_file("tasks/fused_linear_jsd/reference.py", "ref")
inp = import_file("tasks/fused_linear_jsd/inputs.py", "inp")
exp = import_file("tasks/fused_linear_jsd/expert.py", "exp")
nai = import_file("tests/solutions/fused_linear_jsd_naive.py", "nai")
dev = torch.device("cuda")
print(torch.cuda.get_device_name(), torch.__version__)
def rel(a, b): return float((a.double() - b.double()).norm() / b.double().norm())
def errs(out, want): return "loss %.2e dhs %.2e dWs %.2e" % (abs(float(out[0]) - float(want[0])) / abs(float(want[0])), rel(out[1], want[1]), rel(out[2], want[2]))
print("[1] errors vs exact (bounds: loss 1e-4, dhs/dWs 1e-2)")
cases = [("bt16384_d2048_v32000", dict(BT=16384, D=2048, V=32000), 3, None)]
cases += [(f"fresh_bt1000_d512_v5000_beta{b}", dict(BT=1000, D=512, V=5000), 10 + i, b) for i, b in enumerate([0.0, 0.3, 0.5, 1.0])]
for name, wl, seed, beta in cases:
    d = inp.make_inputs(wl, seed, dev)
    if beta is not None: d["beta"] = beta
    want = ref.exact(**d)
    line = f"  {name:34s} beta={d['beta']:.2f} T={d['temperature']:.2f} loss={float(want[0]):.4f}"
    for label, f in (("expert", exp.run), ("naive", nai.run), ("reference", ref.reference)):
        line += f" | {label}: " + errs(f(**d), want)
    print(line)
    del d, want
    torch.cuda.empty_cache()
print("[1b] peak memory and quick event timing (3 calls after 1 warm-up, same inputs, median ms)")
def timed(f, d):
    f(**d); torch.cuda.synchronize()
    ts = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(**d); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    return sorted(ts)[1]
for w in task.spec.workloads:
    ax = w.axes
    d = inp.make_inputs(ax, 1, dev)
    flops = 8 * ax["BT"] * ax["D"] * ax["V"]
    torch.cuda.synchronize(); base = torch.cuda.memory_allocated()
    res = {}
    for label, f in (("expert", exp.run), ("reference", ref.reference)):
        torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
        try:
            ms = timed(f, d)
            peak = (torch.cuda.max_memory_allocated() - base) / 1e9
            res[label] = ms
            print(f"  {w.name:24s} {label:9s} {ms:8.2f} ms  {flops / ms / 1e9:6.1f} TFLOP/s  peak +{peak:.1f} GB  beta={d['beta']:.2f}")
        except Exception as e:  # noqa: BLE001
            print(f"  {w.name:24s} {label:9s} FAILED {type(e).__name__}: {str(e)[:200]}")
    if len(res) == 2:
        print(f"  {w.name:24s} speedup {res['reference'] / res['expert']:.2f}x, expert at {flops / 989e12 * 1e3 / res['expert']:.0%} of the 8 BT D V floor at 989 TFLOP/s")
    del d
    torch.cuda.empty_cache()
PY
echo "[2] bench"
timeout 400 python3 -c 'from workbench.cli import main; main()' bench tasks fused_linear_jsd --reports $OUT/reports 2>&1 | tail -30
