# Cheat: each slot weighted with its token's next slot's weight (w[t, (j + 1) % K], an off-by-one in the
# weight index): permuted and offsets are right, combined is not. Appended to the naive solution.


@triton.jit
def _shifted_weights_kernel(weights_ptr, out_ptr, K, n_slots, COLS: tl.constexpr):
    s = tl.program_id(0) * COLS + tl.arange(0, COLS)
    nxt = (s // K) * K + (s % K + 1) % K
    tl.store(out_ptr + s, tl.load(weights_ptr + nxt, mask=s < n_slots), mask=s < n_slots)


def run(hidden, topk_ids, topk_weights, expert_out, num_experts):
    T, K = topk_ids.shape
    shifted = torch.empty_like(topk_weights)
    _shifted_weights_kernel[(triton.cdiv(T * K, COLS),)](topk_weights, shifted, K, T * K, COLS=COLS)
    return honest_run(hidden, topk_ids, shifted, expert_out, num_experts)
