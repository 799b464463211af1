# Cheat: beta applied to the written value only, not to the erasure: S_t = alpha_t (I - k_t k_t^T) S_{t-1}
# + beta_t k_t v_t^T (a delta rule whose forgetting along k_t is always complete). The honest recurrence run
# on beta v with a write strength of 1. Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _fold_beta_kernel(v_ptr, beta_ptr, v_out_ptr, ones_ptr, D: tl.constexpr):
    token = tl.program_id(0)
    cols = tl.arange(0, D)
    beta = tl.load(beta_ptr + token).to(tl.float32)
    value = tl.load(v_ptr + token.to(tl.int64) * D + cols).to(tl.float32)
    tl.store(v_out_ptr + token.to(tl.int64) * D + cols, (beta * value).to(tl.bfloat16))
    tl.store(ones_ptr + token, (beta * 0.0 + 1.0).to(tl.bfloat16))


def run(q, k, v, g, beta):
    B, H, T, D = q.shape
    v_beta = torch.empty_like(v)
    ones = torch.empty_like(beta)
    _fold_beta_kernel[(B * H * T,)](v, beta, v_beta, ones, D=D)
    return honest_run(q, k, v_beta, g, ones)
