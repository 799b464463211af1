#!/usr/bin/env bash
# The integrity issue of round three on the GPU, in two device calls (each under 10 minutes):
#   bash scripts/gpu_integrity_round3.sh classes   the round-3 classes on this harness and on the landed
#                                                  one (.before/, `git archive <landed> | tar -x -C .before`),
#                                                  the sandbox, the policy's reachability walk here
#   bash scripts/gpu_integrity_round3.sh experts   every expert (bench tasks) against the recorded speedups,
#                                                  and the whole GPU red team
# Needs .whl/ (scripts/fetch_device_wheels.sh) and .tools/ (scripts/install_bwrap.sh). Logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-logs}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)"
case "${1:-classes}" in
classes)
  echo "== sandbox"; [ -f scripts/gpu_sandbox_check.sh ] && timeout 120 bash scripts/gpu_sandbox_check.sh 2>&1 | tail -8
  echo "== the policy's reachability walk on this torch and triton"
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_policy_allowlist.py 2>&1 | tail -4
  echo "== round-3 cheats on the landed harness (.before)"
  [ -d .before ] && (cd .before && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 ../scripts/round3_cheats_on.py . 2>&1 | grep -v "^  ")
  echo "== round-3 classes on this harness (tests, one at a time)"
  timeout 330 python3 -m pytest -q -p no:cacheprovider tests/redteam/test_integrity_round3.py -k gpu 2>&1 | tail -25
  ;;
experts)
  echo "== every expert"
  timeout 420 python3 -m workbench bench tasks --reports "$OUT/reports" > "$OUT/bench_tasks.txt" 2> "$OUT/bench_tasks.err"
  python3 scripts/compare_expert_speedups.py "$OUT/reports"
  echo "== the GPU red team (the memory hoarder alone, then 6 workers; the round-3 classes ran alone in 'classes')"
  timeout 60 python3 -m pytest -q -p no:cacheprovider tests/redteam -k "gpu and unbounded_alloc" 2>&1 | tail -2
  timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 tests/redteam -k "gpu and not unbounded_alloc and not integrity_round3" 2>&1 | tail -15
  ;;
esac
