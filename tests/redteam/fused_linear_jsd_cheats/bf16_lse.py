# Precision: each row's log-sum-exp (both heads) rounded to bfloat16 before use, so log q and log p are shifted
# by up to 2^-9 of the log-sum-exp (0.03 at 16): q no longer sums to 1 and the gradients move by 1-9%.
@triton.jit
def _round_bf16_kernel(x_ptr, n, BLOCK_E: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_E + tl.arange(0, BLOCK_E)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(x_ptr + offs, x.to(tl.bfloat16).to(tl.float32), mask=offs < n)


def _round_lse(step, values):
    if step == "lse":
        _round_bf16_kernel[(triton.cdiv(values.numel(), 1024),)](values, values.numel(), BLOCK_E=1024)


def run(hs, Ws, ht, Wt, labels, beta, temperature):
    return solve(hs, Ws, ht, Wt, labels, beta, temperature, after=_round_lse)
