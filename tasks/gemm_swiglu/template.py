"""Starting point for the ``gemm_swiglu`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Linear layer + SwiGLU: return ``silu(x @ w[:I].T) * (x @ w[I:].T)`` as a new contiguous bfloat16 ``[M, I]``.

    ``x`` is bfloat16 ``[M, K]``; ``w`` is bfloat16 ``[2 I, K]`` in ``nn.Linear`` layout, the gate
    projection's ``I`` rows first, then the up projection's. See description.md.
    """
    raise NotImplementedError("implement run(x, w) with Triton kernels")
