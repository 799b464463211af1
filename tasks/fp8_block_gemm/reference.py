"""Reference semantics for the ``fp8_block_gemm`` task.

A block-wise FP8 linear layer as DeepSeek-V3 runs it: activations quantised per token and per group of
128 channels, weights per 128 x 128 block, both to ``float8_e4m3fn`` with float32 scales::

    A  [M, K]        fp8    activations,   As [M, K/128]        float32, one scale per row and K group
    B  [N, K]        fp8    weights,       Bs [N/128, K/128]    float32, one scale per 128 x 128 block

    a[m, k] = A[m, k] * As[m, k // 128]
    b[n, k] = B[n, k] * Bs[n // 128, k // 128]
    C       = a @ b^T                       bfloat16 [M, N]

``B`` is stored like an ``nn.Linear`` weight (one row per output feature), so ``C = linear(a, b)``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

GROUP: int = 128  # the quantisation block: 1 x 128 for activations, 128 x 128 for weights


def _check(A: torch.Tensor, As: torch.Tensor, B: torch.Tensor, Bs: torch.Tensor) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"A must be [M, K] and B [N, K], got {tuple(A.shape)} and {tuple(B.shape)}")
    (M, K), N = A.shape, B.shape[0]
    if K % GROUP or N % GROUP:
        raise ValueError(f"K and N must be multiples of {GROUP}, got K={K}, N={N}")
    if As.shape != (M, K // GROUP) or Bs.shape != (N // GROUP, K // GROUP):
        raise ValueError(f"As must be [M, K/128] and Bs [N/128, K/128], got {tuple(As.shape)} and {tuple(Bs.shape)}")
    if A.dtype != torch.float8_e4m3fn or B.dtype != torch.float8_e4m3fn:
        raise ValueError(f"A and B must be float8_e4m3fn, got {A.dtype} and {B.dtype}")
    if As.dtype != torch.float32 or Bs.dtype != torch.float32:
        raise ValueError(f"As and Bs must be float32, got {As.dtype} and {Bs.dtype}")


def dequantise_activations(A: torch.Tensor, As: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``A * As`` with each scale broadcast over its 128 channels, computed in ``dtype``: [M, K]."""
    M, K = A.shape
    return (A.to(dtype).view(M, K // GROUP, GROUP) * As.to(dtype).unsqueeze(-1)).view(M, K)


def dequantise_weights(B: torch.Tensor, Bs: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``B * Bs`` with each scale broadcast over its 128 x 128 block, computed in ``dtype``: [N, K]."""
    N, K = B.shape
    blocks = B.to(dtype).view(N // GROUP, GROUP, K // GROUP, GROUP)
    return (blocks * Bs.to(dtype)[:, None, :, None]).view(N, K)


def reference(A: torch.Tensor, As: torch.Tensor, B: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
    """Eager PyTorch as a user without FP8 kernels writes it: dequantise both operands, one bf16 GEMM.

    The scales are applied in float32 and the dequantised operands rounded to bfloat16, then
    ``F.linear`` (cuBLAS, fp32 accumulation) gives a new contiguous bfloat16 ``[M, N]``.
    """
    _check(A, As, B, Bs)
    a = dequantise_activations(A, As, torch.float32).to(torch.bfloat16)
    b = dequantise_weights(B, Bs, torch.float32).to(torch.bfloat16)
    return F.linear(a, b).contiguous()


def library(A: torch.Tensor, As: torch.Tensor, B: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
    """The library call a practitioner has instead (task.toml ``[library]``): ``torch._scaled_mm`` with
    DeepSeek-style block scales (cuBLAS's 1x128 activation and 128x128 weight scaling, CUDA 12.9+ on Hopper).
    cuBLAS wants the activation scales outer-dimension-major (``As`` transposed in memory) and the weight
    operand and its scales as ``[K, N]`` views, which ``B.t()`` and ``Bs.t()`` are without a copy. CUDA only.
    Returns a new bfloat16 ``[M, N]``."""
    _check(A, As, B, Bs)
    return torch._scaled_mm(A, B.t(), scale_a=As.t().contiguous().t(), scale_b=Bs.t(), out_dtype=torch.bfloat16)


def exact(A: torch.Tensor, As: torch.Tensor, B: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
    """Float64 oracle: the FP8 values times their scales, multiplied in float64 (output float64 [M, N])."""
    _check(A, As, B, Bs)
    a = dequantise_activations(A, As, torch.float64)
    b = dequantise_weights(B, Bs, torch.float64)
    return a @ b.T
