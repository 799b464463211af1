#!/usr/bin/env bash
# One device call for issue 3: the red-team suite on the GPU, the honest solution on all workloads,
# and the harness-vs-do_bench benchmark. Logs go to $OUT (the device tool) or ./gpu-logs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-logs}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)"
echo "== eval honest naive solution (all registered workloads)"
timeout 300 python3 -m workbench eval muon_orthogonalize tests/solutions/muon_naive.py --device cuda 2>&1 | tee "$OUT/eval_naive.txt"
echo "== bench harness"
timeout 200 python3 -m workbench bench harness 2>&1 | tee "$OUT/bench_harness.txt"
echo "== red team on GPU"
timeout 400 python3 -m pytest -q -p no:cacheprovider tests/redteam -k gpu 2>&1 | tee "$OUT/redteam_gpu.txt" | tail -40
