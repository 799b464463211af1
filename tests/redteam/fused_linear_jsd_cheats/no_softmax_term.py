# Wrong algebra: the softmax Jacobian's row term dropped, dz = c q (log q - log m) instead of
# c q (log q - log m - KL(q || m)) (and q (log q - log p) for reverse KL): the row sums are zeroed before the
# gradient kernel reads them. The loss, and forward KL's gradient (which has no row term), are honest.
@triton.jit
def _zero_kernel(x_ptr, n, BLOCK_E: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_E + tl.arange(0, BLOCK_E)
    tl.store(x_ptr + offs, tl.zeros([BLOCK_E], dtype=tl.float32), mask=offs < n)


def _drop_row_term(step, values):
    if step == "kl":
        _zero_kernel[(triton.cdiv(values.numel(), 1024),)](values, values.numel(), BLOCK_E=1024)


def run(hs, Ws, ht, Wt, labels, beta, temperature):
    return solve(hs, Ws, ht, Wt, labels, beta, temperature, after=_drop_row_term)
