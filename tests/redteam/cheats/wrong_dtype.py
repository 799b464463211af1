# Wrong output dtype: bfloat16 instead of float16.
def run(G, steps):
    out = honest_run(G, steps)
    result = torch.empty(out.shape, dtype=torch.bfloat16, device=out.device)
    _cast_kernel[(triton.cdiv(out.numel(), 1024),)](out, result, out.numel(), BLOCK=1024)
    return result


@triton.jit
def _cast_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask).to(tl.bfloat16), mask=mask)
