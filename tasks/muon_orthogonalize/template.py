"""Starting point for the ``muon_orthogonalize`` task: implement ``run`` with Triton."""

import torch
import triton
import triton.language as tl


def run(G: torch.Tensor, steps: int) -> torch.Tensor:
    """Orthogonalise each matrix of ``G`` with five Polar Express steps.

    ``G`` is a contiguous bfloat16 tensor ``[B, M, N]`` with ``M <= N``;
    ``steps`` must be 5, otherwise raise ``ValueError``. Normalise each matrix
    by (its Frobenius norm * 1.01 + 1e-7), then for each (a, b, c) triple in
    order compute ``A = X X^T``, ``B = b A + c A A``, ``X = a X + B X``.
    Return a new contiguous float16 tensor ``[B, M, N]``. See description.md.
    """
    raise NotImplementedError("implement run(G, steps) with Triton kernels")
