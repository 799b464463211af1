#!/usr/bin/env bash
# One device call for issues 3 and 4: the expert and the honest solution through the harness, the
# harness-vs-do_bench benchmark, and the red-team suite on the GPU. Logs go to $OUT or ./gpu-logs.
# Needs the wheels from scripts/fetch_device_wheels.sh in .whl/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-logs}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=160
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)"
echo "== eval expert (all registered workloads)"
timeout 330 python3 -m workbench eval muon_orthogonalize tasks/muon_orthogonalize/expert.py --device cuda --json --report "$OUT/expert_report.json" > "$OUT/eval_expert.json" 2> "$OUT/eval_expert.err"
python3 -c "import json; d=json.load(open('$OUT/eval_expert.json')); print(d['status'], d['message'][:300]); [print(w['name'], w['status'], w['rel_err'], w['latency_ms'], w['reference_ms'], w['speedup']) for w in d['workloads']]" || tail -20 "$OUT/eval_expert.err"
echo "== eval naive (first workload)"
timeout 150 python3 -m workbench eval muon_orthogonalize tests/solutions/muon_naive.py --device cuda --workload b32_m2048_n5464 --report "$OUT/naive_report.json" 2>&1 | tail -12
echo "== bench harness"
timeout 150 python3 -m workbench bench harness 2>&1 | tee "$OUT/bench_harness.txt" | tail -12
echo "== red team on GPU"
timeout 240 python3 -m pytest -q -p no:cacheprovider -n 8 tests/redteam -k gpu 2>&1 | tee "$OUT/redteam_gpu.txt" | grep -E "passed|failed|Error|assert" | tail -30
