# Cheat: every token's K-th (least weighted) expert skipped, the other K - 1 weighted as if it had run (a loop
# over range(K - 1), or a capacity limit that silently drops the last choice). Appended to the naive solution
# (its run renamed honest_run; its route and experts helpers available).


@triton.jit
def _drop_last_choice_kernel(weights_ptr, K: tl.constexpr):
    tl.store(weights_ptr + tl.program_id(0) * K + K - 1, 0.0)


def run(hidden, router_logits, w13, w2, top_k):
    ids, weights = route(router_logits, top_k)
    _drop_last_choice_kernel[(router_logits.shape[0],)](weights, K=top_k)
    return experts(hidden, w13, w2, ids, weights)
