"""Starting point for the ``rmsnorm_bwd`` task: implement ``run`` with Triton."""

import torch
import triton
import triton.language as tl


def run(dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm backward: return ``(dX, dW)``.

    ``dY`` and ``X`` are contiguous bfloat16 ``[M, N]``, ``W`` is bfloat16 ``[N]`` and ``rstd`` is
    the forward's float32 ``[M]``. With ``xhat = X * rstd`` and ``g = dY * W`` (per row):
    ``dX = rstd * (g - xhat * mean(g * xhat))`` as a new contiguous bfloat16 ``[M, N]``, and
    ``dW = sum over rows of dY * xhat`` as a new float32 ``[N]``. See description.md.
    """
    raise NotImplementedError("implement run(dY, X, W, rstd) with Triton kernels")
