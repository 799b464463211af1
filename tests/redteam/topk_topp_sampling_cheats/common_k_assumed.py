# Cheat: every request assumed to use the batch's common k = 50 (what most rows of the generator use), the per-row
# top_k ignored. Right on those rows; on a row with k < 50 it draws tokens the law filters out, caught at once as
# draws outside the support. Appended to the naive solution (its run renamed honest_run).


def run(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    return honest_run(logits, torch.full_like(top_k, 50), top_p, seed)
