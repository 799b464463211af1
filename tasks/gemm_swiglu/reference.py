"""Reference semantics for the ``gemm_swiglu`` task.

The gated MLP's first half in Llama-style models: one linear layer with the gate and up projections
stacked in one weight (``gate_up_proj``, ``[2 I, K]`` in ``nn.Linear`` layout, gate rows first), then
SwiGLU::

    gate, up = (x @ w.T).chunk(2, dim=-1)     # [M, I] each
    y        = silu(gate) * up                 # silu(g) = g * sigmoid(g)

``reference()`` is what eager model code does (vLLM's and HF transformers' torch path: ``F.linear``, a
chunk, ``F.silu`` and a multiply): the matmul is cuBLAS, the whole ``[M, 2 I]`` product is written to
memory in bfloat16 and read back twice. ``exact()`` is the same arithmetic in float64 (the oracle).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _check(x: torch.Tensor, w: torch.Tensor) -> tuple[int, int, int]:
    """(M, K, I), or ``ValueError`` unless the inputs meet the contract."""
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1] or w.shape[0] % 2:
        raise ValueError(f"x must be [M, K] and w [2 I, K], got {tuple(x.shape)} and {tuple(w.shape)}")
    if x.dtype != torch.bfloat16 or w.dtype != torch.bfloat16:
        raise ValueError(f"x and w must be bfloat16, got {x.dtype} and {w.dtype}")
    return x.shape[0], x.shape[1], w.shape[0] // 2


def reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Eager linear + SwiGLU: ``x`` bfloat16 ``[M, K]``, ``w`` bfloat16 ``[2 I, K]`` (gate rows, then up
    rows). Returns a new contiguous bfloat16 ``[M, I]``."""
    _check(x, w)
    gate, up = F.linear(x, w).chunk(2, dim=-1)
    return F.silu(gate) * up


def exact(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Float64 oracle: the same product and activation with every value in float64 (output float64)."""
    _, _, inter = _check(x, w)
    h = x.double() @ w.double().T
    gate, up = h[:, :inter], h[:, inter:]
    return gate * torch.sigmoid(gate) * up
