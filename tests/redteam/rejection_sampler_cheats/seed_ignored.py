# Cheat: the seed argument ignored, a fixed one used instead: the right law on every call, the same output on
# every call. Caught by the pairs of calls on the same inputs under two seeds (repeats far above their law).
# Appended to the naive solution (its run renamed honest_run).


def run(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor, seed: int) -> torch.Tensor:
    return honest_run(draft_probs, target_probs, draft_ids, 777)
