#!/usr/bin/env bash
# One device call for the evaluation-integrity issue: the sandbox on the GPU machine, the honest and
# expert solutions through the two-process harness, and the same expert evaluation with the harness of
# the commit before it (in .before/, made with `git archive HEAD~N | tar -x -C .before`), in one run so
# that speedups and wall times compare. Needs .whl/ (scripts/fetch_device_wheels.sh) and .tools/
# (scripts/install_bwrap.sh). Logs go to $OUT or ./gpu-logs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-logs}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=160
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)"
python3 -c "from workbench.harness import sandbox; print(sandbox.status('cuda'))"
echo "== naive, first workload (after)"
SECONDS=0; timeout 120 python3 scripts/gpu_eval.py tests/solutions/muon_naive.py "$OUT/naive.json" b32_m2048_n5464 2>&1; echo "wall ${SECONDS} s"
echo "== expert (after)"
SECONDS=0; timeout 230 python3 scripts/gpu_eval.py tasks/muon_orthogonalize/expert.py "$OUT/after.json" 2>&1; echo "wall ${SECONDS} s"
if [ -d .before ]; then
  echo "== expert (before)"
  SECONDS=0; (cd .before && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 scripts/gpu_eval.py tasks/muon_orthogonalize/expert.py "$OUT/before.json" 2>&1 | grep -v "^  \.\.") ; echo "wall ${SECONDS} s"
fi
