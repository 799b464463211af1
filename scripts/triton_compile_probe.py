"""Where a fresh process's first Triton launches spend their time (GPU machine): the driver utilities'
build, then the first, a second (new signature) and a third (same signature, new constexpr) kernel,
each with an empty cache (TRITON_CACHE_DIR=fresh folder) and again with the cache kept.
Usage: python3 scripts/triton_compile_probe.py"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import time, os
t0 = time.perf_counter()
import torch, triton, triton.language as tl
t1 = time.perf_counter()
triton.runtime.driver.active.utils
t2 = time.perf_counter()

@triton.jit
def copy(x, y, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + i, tl.load(x + i, mask=i < n), mask=i < n)

@triton.jit
def axpy(x, y, z, a, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(z + i, a * tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

x = torch.randn(4096, device="cuda"); y = torch.empty_like(x); z = torch.empty_like(x)
torch.cuda.synchronize(); t3 = time.perf_counter()
copy[(4,)](x, y, 4096, BLOCK=1024); torch.cuda.synchronize(); t4 = time.perf_counter()
axpy[(4,)](x, y, z, 2.0, 4096, BLOCK=1024); torch.cuda.synchronize(); t5 = time.perf_counter()
copy[(8,)](x, y, 4096, BLOCK=512); torch.cuda.synchronize(); t6 = time.perf_counter()
print(f"import {t1-t0:.2f} s, driver utils {t2-t1:.2f} s, first kernel {t4-t3:.2f} s,",
      f"second (new signature) {t5-t4:.2f} s, third (new constexpr) {t6-t5:.2f} s")
"""


def main() -> None:
    import triton

    text = (Path(triton.__file__).parent / "backends" / "nvidia" / "driver.py").read_text()
    per_signature = "make_launcher" in text and "compile_module_from_src" in text
    print(f"triton {triton.__version__}: per-signature C launcher: {per_signature}")
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as code:
        child = Path(code) / "probe_child.py"  # @triton.jit needs its source in a file
        child.write_text(CHILD)
        env = {**os.environ, "TRITON_CACHE_DIR": cache}
        for label in ("empty cache", "cache kept"):
            out = subprocess.run([sys.executable, child], env=env, capture_output=True, text=True, check=False)
            print(f"{label}: {out.stdout.strip() or out.stderr[-500:]}")
        print("cache entries:", len(list(Path(cache).iterdir())))


if __name__ == "__main__":
    main()
