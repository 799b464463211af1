# Cheat: offsets as the inclusive prefix sum of the counts (offsets[e] = slots of experts <= e): every start
# is the expert's end. The naive offsets of one expert more, shifted by one. Appended to the naive solution
# (its run renamed honest_run).


def run(hidden, topk_ids, topk_weights, expert_out, num_experts):
    T, K = topk_ids.shape
    permuted, offsets, combined = honest_run(hidden, topk_ids, topk_weights, expert_out, num_experts)
    shifted = torch.empty((num_experts + 2,), dtype=torch.int32, device=hidden.device)
    _offsets_kernel[(num_experts + 2,)](topk_ids, shifted, T * K, CHUNK=CHUNK)  # slots of experts < e, e <= E + 1
    return permuted, shifted[1:], combined
