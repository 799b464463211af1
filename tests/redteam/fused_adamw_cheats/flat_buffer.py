# Cheat: treat each list as one flat buffer starting at its first element, as if the parameters were one
# FSDP-style flat allocation: one launch over all P elements, no work list at all. Wrong wherever the elements
# are separate allocations, which the harness guarantees (gaps between them in the solution process): the
# interpreter's bounds check stops it on the CPU, and on a GPU it reads and writes the gaps.


def run(params, grads, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
    total = sum(p.numel() for p in params)
    decay = 1.0 - lr * weight_decay
    step_size = lr / (1.0 - beta1**step)
    bc2_sqrt = math.sqrt(1.0 - beta2**step)
    _adamw_kernel[(triton.cdiv(total, BLOCK),)](
        params[0], grads[0], exp_avg[0], exp_avg_sq[0], total,
        beta1, 1.0 - beta1, beta2, 1.0 - beta2, decay, step_size, bc2_sqrt, eps, BLOCK=BLOCK,
    )  # fmt: skip
