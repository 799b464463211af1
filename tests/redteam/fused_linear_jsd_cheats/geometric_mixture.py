# Wrong algebra: the mixture's log taken as b log p + (1 - b) log q (a geometric mixture) instead of
# log(b p + (1 - b) q); the KL ends (b = 0, 1) are honest. Then log q - log m = b (log q - log p), so the loss is
# b (1 - b) (KL(p || q) + KL(q || p)) and dz is b (1 - b) times reverse KL's: assembled here from the two honest
# KL calls and an elementwise kernel, exactly what a kernel with that log m computes.
@triton.jit
def _axpby_kernel(x_ptr, y_ptr, out_ptr, a, b, n, BLOCK_E: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_E + tl.arange(0, BLOCK_E)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (a * x + b * y).to(out_ptr.dtype.element_ty), mask=offs < n)


def _axpby(x, y, a, b):
    out = torch.empty_like(x)
    _axpby_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, a, b, x.numel(), BLOCK_E=1024)
    return out


def run(hs, Ws, ht, Wt, labels, beta, temperature):
    if beta in (0.0, 1.0):
        return honest_run(hs, Ws, ht, Wt, labels, beta, temperature)
    loss_fwd, _, _ = honest_run(hs, Ws, ht, Wt, labels, 0.0, temperature)
    loss_rev, dhs_rev, dws_rev = honest_run(hs, Ws, ht, Wt, labels, 1.0, temperature)
    c = beta * (1.0 - beta)
    return _axpby(loss_fwd, loss_rev, c, c), _axpby(dhs_rev, dhs_rev, c, 0.0), _axpby(dws_rev, dws_rev, c, 0.0)
