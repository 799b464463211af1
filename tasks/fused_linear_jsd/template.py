"""Starting point for the ``fused_linear_jsd`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(
    hs: torch.Tensor,
    Ws: torch.Tensor,
    ht: torch.Tensor,
    Wt: torch.Tensor,
    labels: torch.Tensor,
    beta: float,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Distillation loss (generalised JSD) between a student and a frozen teacher linear head, and its
    student gradients: return ``(loss, dhs, dWs)``.

    ``hs``, ``ht`` are contiguous bfloat16 ``[BT, D]`` hidden states; ``Ws``, ``Wt`` contiguous bfloat16
    ``[V, D]`` heads; ``labels`` int64 ``[BT]`` (``-100``: the token is left out); ``beta`` in [0, 1] weights
    the teacher's divergence from the mixture (0: forward KL, 1: reverse KL); ``temperature`` divides both
    heads' logits. ``loss`` is a float32 scalar (0-d), the mean over the non-ignored tokens; ``dhs``
    (bfloat16 ``[BT, D]``) and ``dWs`` (bfloat16 ``[V, D]``) its gradients. See description.md.
    """
    raise NotImplementedError("implement run(hs, Ws, ht, Wt, labels, beta, temperature) with Triton kernels")
