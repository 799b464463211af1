#!/usr/bin/env bash
# The timing issue's GPU figures in one device call (docs/performance.md says what each goal is).
# Usage on the GPU machine, from the repository root, with the wheels from scripts/fetch_device_wheels.sh
# in .whl/ and bubblewrap in .tools/:  bash scripts/gpu_timing_check.sh [OUTDIR]
set -u
OUTDIR=${1:-/tmp/gpu-timing}
mkdir -p "$OUTDIR"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
python3 -c 'import torch, triton, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
echo "== bench harness (5 repeats)"
timeout 240 python3 - <<'PY'
import json, time
from workbench.harness.checker.bench import run_bench
t = time.perf_counter()
rows = run_bench(5)
for r in rows:
    print(" | ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in r.values()))
print("keys:", " | ".join(rows[0].keys()))
print(f"bench took {time.perf_counter() - t:.1f} s")
PY
echo "== expert evaluation"
/usr/bin/time -f "wall %e s, max rss %M KB" timeout 200 python3 scripts/gpu_eval.py tasks/muon_orthogonalize/expert.py "$OUTDIR/expert.json"
echo "== naive evaluation"
/usr/bin/time -f "wall %e s" timeout 120 python3 scripts/gpu_eval.py tests/solutions/muon_naive.py "$OUTDIR/naive.json"
