#!/usr/bin/env bash
# The workloads that need the H200's memory (an H100's 80 GB runs out): fused_adamw's four lists (0.25-0.5 G
# parameters, about 160 bytes a parameter across the checker and the solution process) and fused_linear_ce's
# gemma_bt16384 and qwen_bt4096_d8192 (the reference alone peaks at 47 GiB above its inputs). Each workload is its
# own `eval` (expert, reference and library baseline timed; a report per workload under $OUT), so a timeout loses
# one workload, not the run.
# Usage on the GPU machine, from the repository root, with the wheels from scripts/fetch_device_wheels.sh in .whl/
# (and bubblewrap in .tools/): bash scripts/gpu_h200_memory.sh [pending|adamw|adamw-many|flce|all|adamw-small]
# (adamw, adamw-many and flce each fit one 600-second device call; all does not).
# pending: what issue 33 still lacks on the H200, in one call (about 500 s): the three chunked experts changed
# since their H200 run (bench tasks gated_deltanet chunked_gla mamba2_ssd, reports under $OUT/reports), then
# fused_adamw's two lists that do not fit an H100.
# pending-short: as pending within one call's 600 s with the mamba2_ssd scan's register caps (scripts/
# gpu_ablate_mamba2_ssd.py --registers: 3-4 programs an SM against 2) in place of fused_adamw's GPT list.
# adamw-small: the two fused_adamw lists that fit an 80 GB H100 (the 0.25 G-parameter adapters, and the mixed
# list, whose bfloat16 states make a copy 10 bytes a parameter instead of 14).
set -u
case "${1:-all}" in
  pending | pending-short | adamw | adamw-many | flce | all | adamw-small) ;;
  *) echo "usage: bash scripts/gpu_h200_memory.sh [pending|pending-short|adamw|adamw-many|flce|all|adamw-small]" >&2; exit 2 ;;
esac
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=230
wb=(python3 -c 'from workbench.cli import main; main()')  # an array: `timeout` cannot run a shell function
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; date -u
python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
[ -x .tools/bubblewrap/usr/bin/bwrap ] || command -v bwrap >/dev/null || bash scripts/install_bwrap.sh
WHICH=${1:-all}
one() {  # task workload seconds
  echo "== eval $1 --workload $2 (timeout $3 s)"; local t0=$SECONDS
  timeout "$3" "${wb[@]}" eval "$1" "tasks/$1/expert.py" --device cuda --workload "$2" --report "$OUT/$1-$2.json" 2>&1 \
    | grep -v "^\s*$" | tail -14
  echo "   ($((SECONDS - t0)) s, exit ${PIPESTATUS[0]})"
}
if [ "$WHICH" = pending ] || [ "$WHICH" = pending-short ]; then
  echo "== bench tasks gated_deltanet chunked_gla mamba2_ssd (timeout 200 s)"; t0=$SECONDS
  timeout 200 "${wb[@]}" bench tasks gated_deltanet chunked_gla mamba2_ssd --reports "$OUT/reports" 2>&1 \
    | grep -v "^  " | tail -24
  echo "   ($((SECONDS - t0)) s)"
fi
if [ "$WHICH" = pending-short ]; then
  echo "== mamba2_ssd scan, registers capped (timeout 140 s)"; t0=$SECONDS
  PYTHONPATH=$PYTHONPATH:$PWD/scripts timeout 140 python3 scripts/gpu_ablate_mamba2_ssd.py --registers 2>&1 | tail -24
  echo "   ($((SECONDS - t0)) s)"
fi
if [ "$WHICH" = pending ] || [ "$WHICH" = pending-short ]; then
  one fused_adamw llama7b_layout_291t_w1024 170
fi
if [ "$WHICH" = pending ]; then
  one fused_adamw gpt_0p5b_113t 130
fi
if [ "$WHICH" = adamw ] || [ "$WHICH" = all ]; then
  one fused_adamw llama7b_layout_291t_w1024 170
  one fused_adamw gpt_0p5b_113t 130
  one fused_adamw mixed_1000t 130
fi
if [ "$WHICH" = adamw-many ] || [ "$WHICH" = all ]; then  # its own call: 299 s on an H100 (2026-12-06)
  one fused_adamw many_small_10000t 340
fi
if [ "$WHICH" = adamw-small ]; then
  one fused_adamw mixed_1000t 150
  one fused_adamw many_small_10000t 340
fi
if [ "$WHICH" = flce ] || [ "$WHICH" = all ]; then
  one fused_linear_ce qwen_bt4096_d8192 200
  one fused_linear_ce gemma_bt16384 300
fi
date -u
