# Cheat: greedy decoding, the most likely token of every row (the naive kernel with k = 1), which is what a sampler
# degenerates to when its noise is dropped. Every draw is in the support; the law is wrong (the transforms sit in
# the first token's interval) and the seed does nothing. Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _fill_kernel(ptr, value, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(ptr + offs, tl.full((BLOCK,), value, tl.int32), mask=offs < n)


def _filled(like: torch.Tensor, value: int) -> torch.Tensor:
    out = torch.empty_like(like)
    _fill_kernel[(1,)](out, value, out.numel(), BLOCK=triton.next_power_of_2(out.numel()))
    return out


def run(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    return honest_run(logits, _filled(top_k, 1), top_p, seed)
