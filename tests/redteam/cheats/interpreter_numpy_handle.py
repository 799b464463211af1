# Cheat: inside a @triton.jit body, take the tiles' `.handle.data` (numpy arrays under the CPU
# interpreter) and do the whole Muon iteration with numpy, then store the result through Triton. The
# interpreter runs it; no GPU build compiles it. The harness compiles every launched kernel for the GPU
# before interpreting it, so this is a compile error.
import numpy as np


@triton.jit
def _numpy_muon_kernel(g_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < M * N
    g = tl.load(g_ptr + b * M * N + offs, mask=mask, other=0.0).to(tl.float32)
    rows = int(M.handle.data[0])
    cols = int(N.handle.data[0])
    x = g.handle.data[: rows * cols].reshape(rows, cols).astype(np.float64)
    x = x / (np.sqrt((x * x).sum()) * 1.01 + 1e-7)
    for a, bq, c in COEFFS:
        A = x @ x.T
        x = a * x + (bq * A + c * A @ A) @ x
    g.handle.data[: rows * cols] = x.reshape(-1)
    tl.store(out_ptr + b * M * N + offs, g.to(tl.float16), mask=mask)


def run(G, steps):
    if steps != len(COEFFS):
        raise ValueError(f"steps must be {len(COEFFS)}, got {steps}")
    Bsz, M, N = G.shape
    out = torch.empty((Bsz, M, N), dtype=torch.float16, device=G.device)
    _numpy_muon_kernel[(Bsz,)](G, out, M, N, BLOCK=triton.next_power_of_2(M * N))
    return out
