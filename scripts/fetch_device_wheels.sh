#!/usr/bin/env bash
# Fetch the wheels the GPU machine lacks (Python 3.12, x86-64) into .whl/ (git-ignored), for the
# harness worker there (pydantic and what it needs) and for headless session runs there (gitpython,
# watchfiles). The worker itself needs no TUI, git or model SDK.
# On the GPU machine:  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
set -euo pipefail
usage="usage: bash scripts/fetch_device_wheels.sh   (no arguments: downloads the GPU machine's wheels into .whl/)"
case "${1:-}" in
  "") ;;
  -h|--help) echo "$usage"; exit 0 ;;
  *) echo "error: it takes no arguments ($usage)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
mkdir -p .whl
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl pydantic==2.14.4 pydantic_core==2.50.5 annotated_types typing_inspection typing_extensions \
  gitpython gitdb smmap watchfiles
# The built-in agent's OpenAI SDK and what it needs (campaign and agent sessions run headless there,
# talking to a model server on 127.0.0.1 such as the tests' scripted one).
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl "openai>=3,<4" httpx2 httpcore2 anyio sniffio jiter idna truststore h11 distro
# Library baselines timed beside the references (task.toml [library]): flash-linear-attention's kernels
# (pure Python and Triton) for chunked_gla, gated_deltanet and mamba2_ssd; Liger-Kernel's (pure Python and
# Triton; it needs torch, triton and packaging, all already on the GPU machine) for fused_linear_ce and
# fused_linear_jsd.
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl fla-core==0.6.0 einops liger-kernel==0.8.5
ls .whl
