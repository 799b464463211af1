# Wrong reduction: dW from the first quarter of the rows only, scaled up by 4 (the naive core's
# compute_dw sums the first `rows` rows); dX is honest.
def run(dY, X, W, rstd):
    rows = max(1, X.shape[0] // 4)
    dW = compute_dw(dY, X, rstd, rows)
    return honest_dx(dY, X, W, rstd), _scale_kernel_launch(dW, X.shape[0] / rows)


@triton.jit
def _scale_kernel(p, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(p + offs, tl.load(p + offs, mask=offs < n) * s, mask=offs < n)


def _scale_kernel_launch(t, s):
    _scale_kernel[(triton.cdiv(t.numel(), 256),)](t, t.numel(), s, BLOCK=256)
    return t


honest_dx = compute_dx
