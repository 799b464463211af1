#!/usr/bin/env bash
# Issue 35 on a GPU: the hand-written peer packs imported with timings, their references timed, one scripted agent session.
# Usage on the GPU machine, from the repository root, with the wheels from scripts/fetch_device_wheels.sh in .whl/
# (and bubblewrap in .tools/): bash scripts/gpu_import.sh   (writes reports under $OUT, default /tmp/gpu-out)
set -u
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=230
# Issue 35 on a GPU: the hand-written peer packs (tests/fixtures/peer_packs: 30 problems in KernelBench's format,
# 8 in GPU MODE's) imported with timings, every imported task's reference timed by `bench tasks` on the registered
# workloads, and one agent session on an imported task answered by the scripted model. Under 8 minutes.
# The sandbox: bubblewrap from .tools/ (carried from the development machine, scripts/install_bwrap.sh); without
# it the probe and the solution process run unconfined and say so (`sandbox: none`).
wb=(python3 -c 'from workbench.cli import main; main()')  # an array: `timeout` cannot run a shell function
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
[ -x .tools/bubblewrap/usr/bin/bwrap ] || command -v bwrap >/dev/null || bash scripts/install_bwrap.sh
python3 -c "from workbench.harness.host import sandbox; print('sandbox:', sandbox.status('cuda'))"
OUTDIR=${OUT:-/tmp/import-out}; mkdir -p "$OUTDIR"
WORK=$(mktemp -d /tmp/d2k-import-XXXX)
KB=$WORK/kernelbench; GM=$WORK/gpumode; S=$WORK/sessions

echo "== import kernelbench (30 problems, levels 1-3)"
( time timeout 150 "${wb[@]}" import kernelbench tests/fixtures/peer_packs/kernelbench --into "$KB" 2>/dev/null ) 2>&1 | grep -v "^$" | tail -42
echo "== import gpumode (8 problems)"
( time timeout 60 "${wb[@]}" import gpumode tests/fixtures/peer_packs/gpumode --into "$GM" 2>/dev/null ) 2>&1 | grep -v "^$" | tail -20

echo "== bench tasks: the imported references on the GPU"
( time timeout 120 "${wb[@]}" bench tasks --tasks-dir "$KB" 2>&1 ) 2>&1 | grep -v "^\s*timing\|^$" | tail -40
( time timeout 60 "${wb[@]}" bench tasks --tasks-dir "$GM" 2>&1 ) 2>&1 | grep -v "^\s*timing\|^$" | tail -18

echo "== agent session on kb_l1_4_relu (scripted model, guidance none)"
( time timeout 120 python3 -m workbench.cli.scripted_import tests/fixtures/peer_packs/solutions/relu_triton.py \
    run kb_l1_4_relu --provider openai --model scripted-import --allow-unpriced --device cuda \
    --tasks-dir "$KB" --sessions-dir "$S" ) 2>&1 | tail -14
ID=$(ls "$S" | head -1)
[ -n "$ID" ] && "${wb[@]}" session show "$ID" --sessions-dir "$S" 2>&1 | tail -12
cp -r "$KB/kb_l1_4_relu" "$OUTDIR/" 2>/dev/null; rm -rf "$WORK"
date -u
