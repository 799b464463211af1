"""Starting point for the ``rejection_sampler`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor, seed: int) -> torch.Tensor:
    """Verify each request's drafts; return a new int64 ``[B, D + 1]``: the accepted drafts, the recovered or bonus
    token, then -1.

    ``draft_probs`` float32 ``[B, D, V]``; ``target_probs`` float32 ``[B, D + 1, V]``; ``draft_ids`` int64
    ``[B, D]``; ``seed`` an int that seeds the draws (the same seed, the same output). See description.md.
    """
    raise NotImplementedError("implement run(draft_probs, target_probs, draft_ids, seed) with Triton kernels")
