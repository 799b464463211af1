# Cheat: the seed argument ignored, a fixed one used instead: every call on the same inputs draws the same tokens
# (deterministic, each row's token drawn from the right law once). Caught by the pairs of calls on the same inputs
# under two seeds: the two draws of a row coincide, so their transforms differ by less than the token's interval.
# Appended to the naive solution (its run renamed honest_run).


def run(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    return honest_run(logits, top_k, top_p, 12345)
