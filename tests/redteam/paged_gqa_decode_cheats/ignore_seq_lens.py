# Wrong masking: every sequence attends to its whole page-table row (16 * max_pages tokens), as if all
# sequences had the longest length; seq_lens is replaced by a vector of that length (the naive core's
# decode does the rest honestly). Right only for the one sequence whose length is exactly L.
@triton.jit
def _fill_kernel(p, n, value, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(p + offs, tl.zeros([BLOCK], tl.int32) + value, mask=offs < n)


def run(q, k_cache, v_cache, page_table, seq_lens, scale):
    B = q.shape[0]
    full = torch.empty((B,), dtype=torch.int32, device=q.device)
    _fill_kernel[(1,)](full, B, page_table.shape[1] * 16, BLOCK=triton.next_power_of_2(B))
    return decode(q, k_cache, v_cache, page_table, full, scale)
