"""Starting point for the ``causal_attention_bwd`` task: implement ``run`` with Triton."""

import torch
import triton
import triton.language as tl


def run(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, do: torch.Tensor, lse: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Causal attention backward: return ``(dq, dk, dv)``.

    ``q, k, v, o, do`` are contiguous bfloat16 ``[B, H, S, D]``; ``lse`` is the forward's float32
    ``[B, H, S]`` natural-log log-sum-exp of the scaled, causally masked scores; ``scale`` is the
    softmax scale (1/sqrt(D)). With ``p = exp(scale * q k^T - lse)`` (zero where key > query),
    ``delta = rowsum(do * o)`` and ``ds = p * (do v^T - delta)``: ``dq = scale * ds k``,
    ``dk = scale * ds^T q``, ``dv = p^T do``, each a new contiguous bfloat16 ``[B, H, S, D]``.
    See description.md.
    """
    raise NotImplementedError("implement run(q, k, v, o, do, lse, scale) with Triton kernels")
