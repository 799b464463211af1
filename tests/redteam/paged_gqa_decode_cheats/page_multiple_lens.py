# Wrong length handling: the length is rounded up to a whole page (cdiv(n, 16) * 16), as if every
# sequence filled its last page; the stale slots after the last token of the last page are attended.
# Right only when lengths are multiples of 16, which the generator's ragged lengths rarely are.
@triton.jit
def _round_up_kernel(lens_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    lens = tl.load(lens_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, (lens + 15) // 16 * 16, mask=offs < n)


def run(q, k_cache, v_cache, page_table, seq_lens, scale):
    B = q.shape[0]
    whole = torch.empty((B,), dtype=torch.int32, device=q.device)
    _round_up_kernel[(1,)](seq_lens, whole, B, BLOCK=triton.next_power_of_2(B))
    return decode(q, k_cache, v_cache, page_table, whole, scale)
