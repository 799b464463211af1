"""Starting point for the ``add_rmsnorm_fp8_quant`` task: implement ``run`` with Triton."""

import torch
import triton
import triton.language as tl


def run(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Residual add, RMSNorm and per-token-group (1 x 128) FP8 e4m3 quantisation.

    ``x`` and ``residual`` are contiguous bfloat16 ``[M, N]`` (N a multiple of 128), ``weight`` is
    bfloat16 ``[N]`` and ``eps`` must be 1e-6 (raise ValueError otherwise). Update ``residual`` in
    place to ``bfloat16(x + residual)``; with ``s`` the float32 sum, ``h = s / sqrt(mean(s^2) + eps) * weight``.
    Return ``(y, scales)``: ``y`` a new contiguous ``torch.float8_e4m3fn`` ``[M, N]`` and ``scales`` a
    new contiguous float32 ``[M, N / 128]``, one positive scale per row and group of 128 columns, such
    that ``y * scale`` approximates ``h``. See description.md.
    """
    raise NotImplementedError("implement run(x, residual, weight, eps) with Triton kernels")
