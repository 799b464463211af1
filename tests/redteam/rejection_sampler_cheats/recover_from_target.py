# Cheat: at the first rejection the recovered token is drawn from the target's distribution p_n instead of the
# residual max(p_n - q_n, 0) (a common slip: it over-emits the tokens the draft already over-proposed, the
# rejected draft among them). Caught as draws the law never makes: tokens where p_n <= q_n have residual 0.
# Appended to the naive solution (its run renamed honest_run): the final kernel given a zero draft tensor.


def run(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor, seed: int) -> torch.Tensor:
    B, D, V = draft_probs.shape
    accepted = torch.empty((B,), dtype=torch.int32, device=draft_probs.device)
    tokens = torch.empty((B, D + 1), dtype=torch.int64, device=draft_probs.device)
    no_draft = torch.zeros_like(draft_probs)
    _accept_kernel[(B,)](draft_probs, target_probs, draft_ids, accepted, D, V, seed)
    _final_kernel[(B,)](no_draft, target_probs, draft_ids, accepted, tokens, B, D, V, seed, BLOCK=BLOCK)
    return tokens
