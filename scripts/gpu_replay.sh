#!/usr/bin/env bash
# Issue 5 on the GPU: replay the shipped example session on this machine's GPU (every revision
# re-evaluated, latencies recorded) and export the result as a shippable example under $OUT/h200_replay.
# Needs the wheels from scripts/fetch_device_wheels.sh in .whl/ and a git binary.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-logs}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=160 D2K_SESSIONS_DIR=/tmp/d2k-sessions
git --version || { echo "no git here"; exit 1; }
git config --global user.email >/dev/null || git config --global user.email d2k@localhost
git config --global user.name >/dev/null || git config --global user.name d2k
timeout 480 python3 -m workbench replay "${1:-eab7}" --device cuda 2>&1 | tee "$OUT/replay.log" | tail -25
id=$(head -1 "$OUT/replay.log" | awk '{print $NF}')
python3 -m workbench session show "$id" 2>&1 | tail -15
python3 -m workbench session export "$id" "$OUT/h200_replay" && ls -la "$OUT/h200_replay"
