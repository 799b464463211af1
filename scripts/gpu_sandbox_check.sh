#!/usr/bin/env bash
# Issue 26 (findings 5 and 8) on a GPU: the expert solution through the harness with the allow-list sandbox
# on (an empty root with only the system folders, the interpreter, the package's solution-side modules and
# the solution file bound; a Triton cache of its own in the private /tmp), then the same with the sandbox
# off (a fresh HOME, TMPDIR and Triton cache, removed afterwards). Prints each run's sandbox line and status,
# and what the solution process can see. Logs go to $OUT or ./gpu-logs.
# Needs the wheels from scripts/fetch_device_wheels.sh in .whl/ (installed into /tmp/site)
# and bubblewrap in .tools/ (scripts/install_bwrap.sh; the device machine has no bwrap of its own).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-logs}; mkdir -p "$OUT"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 COLUMNS=160
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)"
python3 -c "from workbench.harness import sandbox; print('bwrap:', sandbox.find_bwrap()); print('status:', sandbox.status('cuda'))"
python3 - <<'PY'
from workbench.harness.host import sandbox
print("bound beside the system folders:")
for path in sandbox.interpreter_paths():
    print("  ", path)
print("solution-side modules:", len(sandbox.module_files(["workbench.harness.solution.host", "workbench.harness.solution.fast_exit"])))
PY
summary='import json, sys; d = json.load(open(sys.argv[1])); print("status:", d["status"], d["message"][:600]); print("sandbox:", d["sandbox"]); [print("  ", w["name"], w["status"], w["latency_ms"], w["speedup"]) for w in d["workloads"]]'
for mode in on off; do
  echo "== eval expert on cuda, sandbox $mode"
  before=$(ls -d "${TMPDIR:-/tmp}"/d2k-eval-*-solution-* 2>/dev/null | wc -l)
  if [ "$mode" = off ]; then export D2K_SANDBOX=off; else unset D2K_SANDBOX; fi
  timeout 420 python3 -m workbench eval muon_orthogonalize tasks/muon_orthogonalize/expert.py --device cuda --json \
    > "$OUT/sandbox_$mode.json" 2> "$OUT/sandbox_$mode.err"
  echo "exit code $?"
  python3 -c "$summary" "$OUT/sandbox_$mode.json" || tail -30 "$OUT/sandbox_$mode.err"
  after=$(ls -d "${TMPDIR:-/tmp}"/d2k-eval-*-solution-* 2>/dev/null | wc -l)
  echo "private folders left behind: $((after - before)) (must be 0)"
done
unset D2K_SANDBOX
echo "== what a sandboxed process sees on this machine (tests/test_sandbox.py, tests/redteam/test_sandbox_allowlist.py)"
timeout 420 python3 -m pytest -q -p no:cacheprovider -p no:xdist tests/test_sandbox.py tests/test_sandbox_gpu_nodes.py \
  tests/redteam/test_sandbox_allowlist.py 2>&1 | tee "$OUT/sandbox_tests.txt" | grep -E "passed|failed|Error|assert" | tail -30
