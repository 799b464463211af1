"""Reference semantics for the ``splitk_gemm`` task.

A skinny linear layer at decode time: a few tokens' activations ``a [M, K]`` times a weight stored in
``nn.Linear`` layout ``w [N, K]`` (each output feature's row, K contiguous)::

    c = a @ w.T        # [M, N], sums over K in fp32, rounded to bfloat16 once

``reference()`` is what model code runs (``torch.matmul(a, w.t())``, as ``F.linear`` does): one cuBLAS GEMM
on the GPU, which is also the best library call for the job, so this task has no separate library baseline.
``exact()`` is the same product in float64 (the oracle).
"""

from __future__ import annotations

import torch


def _check(a: torch.Tensor, w: torch.Tensor) -> tuple[int, int, int]:
    """(M, K, N), or ``ValueError`` unless the inputs meet the contract."""
    if a.ndim != 2 or w.ndim != 2 or a.shape[1] != w.shape[1]:
        raise ValueError(f"a must be [M, K] and w [N, K], got {tuple(a.shape)} and {tuple(w.shape)}")
    if a.dtype != torch.bfloat16 or w.dtype != torch.bfloat16:
        raise ValueError(f"a and w must be bfloat16, got {a.dtype} and {w.dtype}")
    return a.shape[0], a.shape[1], w.shape[0]


def reference(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """cuBLAS's skinny GEMM: ``a`` bfloat16 ``[M, K]``, ``w`` bfloat16 ``[N, K]``; a new contiguous bfloat16
    ``[M, N]`` equal to ``a @ w.T`` (fp32 accumulation)."""
    _check(a, w)
    return torch.matmul(a, w.t())


def exact(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Float64 oracle: the same product with every value in float64 (output float64)."""
    _check(a, w)
    return a.double() @ w.double().T
