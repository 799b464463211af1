# Wrong algorithm: normalise by the Frobenius norm without the 1.01 safety factor.
@triton.jit
def _normalise_no_margin_kernel(g_ptr, part_ptr, x_ptr, numel, n_chunks,
                                BLOCK: tl.constexpr, ITERS: tl.constexpr, PBLOCK: tl.constexpr):
    chunk = tl.program_id(0)
    b = tl.program_id(1)
    total = tl.zeros([PBLOCK], dtype=tl.float32)
    for p0 in range(0, n_chunks, PBLOCK):
        p = p0 + tl.arange(0, PBLOCK)
        total += tl.load(part_ptr + b * n_chunks + p, mask=p < n_chunks, other=0.0)
    denom = tl.sqrt(tl.sum(total, axis=0)) + 1e-7
    base = b.to(tl.int64) * numel
    start = chunk.to(tl.int64) * (BLOCK * ITERS)
    for i in range(ITERS):
        offs = start + i * BLOCK + tl.arange(0, BLOCK)
        mask = offs < numel
        g = tl.load(g_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(x_ptr + base + offs, (g / denom).to(tl.float16), mask=mask)


_normalise_kernel = _normalise_no_margin_kernel  # the honest core looks the kernel up at call time


def run(G, steps):
    return honest_run(G, steps)
