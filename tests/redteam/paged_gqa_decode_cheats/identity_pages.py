# Wrong addressing: the page table is assumed to be the identity (sequence b's j-th page is page
# b * max_pages + j, the contiguous layout of a freshly allocated cache), so the real page table is
# never read. Right only if the allocator happened to hand out pages in order.
@triton.jit
def _iota_pages_kernel(p, max_pages, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    j = tl.arange(0, BLOCK)
    tl.store(p + b * max_pages + j, b * max_pages + j, mask=j < max_pages)


def run(q, k_cache, v_cache, page_table, seq_lens, scale):
    B, max_pages = page_table.shape
    contiguous = torch.empty((B, max_pages), dtype=torch.int32, device=q.device)
    _iota_pages_kernel[(B,)](contiguous, max_pages, BLOCK=triton.next_power_of_2(max_pages))
    return decode(q, k_cache, v_cache, contiguous, seq_lens, scale)
