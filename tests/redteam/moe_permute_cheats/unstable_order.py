# Cheat: slots of one expert in reverse order (what an unstable parallel sort may leave): the naive
# positions computed on the slots taken backwards, which puts later slots of an expert first. The expert
# groups and their offsets are right, the rows within each group are not. Appended to the naive solution
# (its run renamed honest_run).


@triton.jit
def _reverse_kernel(src_ptr, dst_ptr, n, COLS: tl.constexpr):
    i = tl.program_id(0) * COLS + tl.arange(0, COLS)
    tl.store(dst_ptr + i, tl.load(src_ptr + n - 1 - i, mask=i < n), mask=i < n)


def run(hidden, topk_ids, topk_weights, expert_out, num_experts):
    T, K = topk_ids.shape
    n = T * K
    permuted, offsets, combined = honest_run(hidden, topk_ids, topk_weights, expert_out, num_experts)
    backwards = torch.empty((n,), dtype=torch.int32, device=hidden.device)
    _reverse_kernel[(triton.cdiv(n, COLS),)](topk_ids, backwards, n, COLS=COLS)
    dest_backwards = torch.empty_like(backwards)
    _dest_kernel[(n,)](backwards, dest_backwards, n, CHUNK=CHUNK)
    dest = torch.empty_like(backwards)
    _reverse_kernel[(triton.cdiv(n, COLS),)](dest_backwards, dest, n, COLS=COLS)
    _copy_kernel[(n,)](hidden, dest, permuted, hidden.shape[1], K, COLS=COLS)
    return permuted, offsets, combined
