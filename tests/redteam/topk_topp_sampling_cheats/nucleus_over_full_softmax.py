# Cheat: the nucleus measured against the whole vocabulary's softmax instead of the top-k distribution (the mass
# kept by top-k is compared with p times the mass of every token). Where top-k cuts off real mass (a flat row with
# k = 50), p of the full mass is never reached inside the top-k set, so top-p keeps all of it: tokens the law's
# nucleus drops are drawn, caught as draws outside the support. Appended to the naive solution (its run renamed
# honest_run; its _row_max, _top_k_cut, _mass_at_least, _top_p_cut and _race used as they are).


@triton.jit
def _full_softmax_nucleus_kernel(logits_ptr, top_k_ptr, top_p_ptr, out_ptr, V, stride_row, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * stride_row
    row_max = _row_max(row_ptr, V, BLOCK)
    kth_key = _top_k_cut(row_ptr, V, tl.load(top_k_ptr + row), BLOCK)
    total = _mass_at_least(row_ptr, V, tl.full((), -2147483648, tl.int32), row_max, BLOCK)  # every token: the bug
    cut_key = _top_p_cut(row_ptr, V, tl.load(top_p_ptr + row), kth_key, row_max, total, BLOCK)
    tl.store(out_ptr + row, _race(row_ptr, V, row, cut_key, row_max, seed, BLOCK).to(tl.int64))


def run(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    B, V = logits.shape
    tokens = torch.empty((B,), dtype=torch.int64, device=logits.device)
    _full_softmax_nucleus_kernel[(B,)](logits, top_k, top_p, tokens, V, logits.stride(0), seed, BLOCK=BLOCK)
    return tokens
