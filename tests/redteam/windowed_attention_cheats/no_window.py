# Wrong mask: the window ignored (plain document-causal attention, as if W = S); documents honest.
def run(q, k, v, cu_seqlens, window):
    return attention(q, k, v, cu_seqlens, q.shape[2], cu_seqlens.shape[1] - 1)
