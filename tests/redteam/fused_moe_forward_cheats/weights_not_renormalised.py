# Cheat: the top-K probabilities used as they come out of the full softmax, not renormalised over the K chosen
# experts (Qwen3 with norm_topk_prob off, DeepSeek-V2's routing): every token's output shrinks by the
# probability mass of the experts it was not routed to. Appended to the naive solution (its run renamed
# honest_run; its route and experts helpers available).


@triton.jit
def _full_softmax_weights_kernel(logits_ptr, ids_ptr, weights_ptr, E, K: tl.constexpr, E_PAD: tl.constexpr):
    t = tl.program_id(0)
    experts = tl.arange(0, E_PAD)
    z = tl.load(logits_ptr + t * E + experts, mask=experts < E, other=-float("inf"))
    top = tl.max(z, axis=0)
    denominator = tl.sum(tl.exp(z - top), axis=0)
    for j in tl.static_range(K):
        e = tl.load(ids_ptr + t * K + j)
        tl.store(weights_ptr + t * K + j, tl.exp(tl.load(logits_ptr + t * E + e) - top) / denominator)


def run(hidden, router_logits, w13, w2, top_k):
    T, E = router_logits.shape
    ids, weights = route(router_logits, top_k)
    _full_softmax_weights_kernel[(T,)](router_logits, ids, weights, E, K=top_k, E_PAD=triton.next_power_of_2(E))
    return experts(hidden, w13, w2, ids, weights)
