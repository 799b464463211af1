# Honest: the sums of squares accumulate with libdevice.fma (one rounding per step), which runs on the
# GPU and, through the harness's mapping, under the CPU interpreter. Otherwise the straightforward
# solution's steps: normalise, then five Polar Express steps of batched GEMMs.
from triton.language.extra import libdevice


@triton.jit
def _sumsq_fma_kernel(g_ptr, part_ptr, numel, n_chunks, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    chunk = tl.program_id(0)
    b = tl.program_id(1)
    base = g_ptr + b.to(tl.int64) * numel
    start = chunk.to(tl.int64) * (BLOCK * ITERS)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(ITERS):
        offs = start + i * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < numel, other=0.0).to(tl.float32)
        acc = libdevice.fma(x, x, acc)
    tl.store(part_ptr + b * n_chunks + chunk, tl.sum(acc, axis=0))


def run(G, steps):
    if steps != len(COEFFS):
        raise ValueError(f"steps must be {len(COEFFS)}, got {steps}")
    Bsz, M, N = G.shape
    numel = M * N
    n_chunks = triton.cdiv(numel, _CHUNK)
    partials = torch.empty((Bsz, n_chunks), dtype=torch.float32, device=G.device)
    X = torch.empty((Bsz, M, N), dtype=torch.float16, device=G.device)
    _sumsq_fma_kernel[(n_chunks, Bsz)](G, partials, numel, n_chunks, BLOCK=_RED_BLOCK, ITERS=_RED_ITERS)
    pblock = min(1024, triton.next_power_of_2(n_chunks))
    _normalise_kernel[(n_chunks, Bsz)](G, partials, X, numel, n_chunks, BLOCK=_RED_BLOCK, ITERS=_RED_ITERS, PBLOCK=pblock)
    A = torch.empty((Bsz, M, M), dtype=torch.float16, device=G.device)
    Bm = torch.empty_like(A)
    Y = torch.empty_like(X)
    for a, b, c in COEFFS:
        _bmm(X, X.mT, A, 1.0)
        _bmm(A, A, Bm, c, D=A, beta=b)
        _bmm(Bm, X, Y, 1.0, D=X, beta=a)
        X, Y = Y, X
    return X
