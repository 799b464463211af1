#!/usr/bin/env bash
# The red team on one GPU: the cheat that hoards device memory runs alone (beside it, other evaluations
# would run out of memory and be charged for it), then the rest in parallel.
# Usage on the GPU machine, from the repository root, with the wheels of scripts/fetch_device_wheels.sh installed
# (python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl; PYTHONPATH=/tmp/site:$PWD):
#   bash scripts/gpu_redteam.sh [WORKERS]
set -u
case "${1:-}" in
  -h|--help) echo "usage: bash scripts/gpu_redteam.sh [WORKERS]   (on the GPU machine; default 6 workers)"; exit 0 ;;
  *[!0-9]*) echo "error: WORKERS must be a number, not '$1'" >&2; exit 2 ;;
esac
WORKERS=${1:-6}
python3 -m pytest -q -p no:cacheprovider tests/redteam -k "gpu and unbounded_alloc" || status=1
python3 -m pytest -q -p no:cacheprovider -n "$WORKERS" tests/redteam -k "gpu and not unbounded_alloc" || status=1
exit ${status:-0}
