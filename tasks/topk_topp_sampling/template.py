"""Starting point for the ``topk_topp_sampling`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    """Draw one token per row after top-k then top-p filtering; return a new int64 ``[B]``.

    ``logits`` float32 ``[B, V]``; ``top_k`` int32 ``[B]`` (1..V); ``top_p`` float32 ``[B]`` (0, 1]; ``seed`` an int
    that seeds the draws (the same seed, the same tokens). See description.md for the exact law.
    """
    raise NotImplementedError("implement run(logits, top_k, top_p, seed) with Triton kernels")
