# Cheat: verification skipped, every draft accepted and a bonus token drawn from p_D (the fastest possible
# "sampler": no test at all). Every row is a valid outcome with positive probability; the law is wrong (all
# mass on n = D), caught by the pooled uniforms. Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _fill_kernel(ptr, value, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(ptr + offs, tl.full((BLOCK,), value, tl.int32), mask=offs < n)



def run(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor, seed: int) -> torch.Tensor:
    B, D, V = draft_probs.shape
    accepted = torch.empty((B,), dtype=torch.int32, device=draft_probs.device)
    _fill_kernel[(1,)](accepted, D, B, BLOCK=triton.next_power_of_2(B))
    tokens = torch.empty((B, D + 1), dtype=torch.int64, device=draft_probs.device)
    _final_kernel[(B,)](draft_probs, target_probs, draft_ids, accepted, tokens, B, D, V, seed, BLOCK=BLOCK)
    return tokens
