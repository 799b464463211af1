"""Starting point for the ``windowed_attention`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401
import triton.language as tl  # noqa: F401


def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, window: int) -> torch.Tensor:
    """Sliding-window, document-masked causal attention: return ``o``.

    ``q``, ``k``, ``v`` are contiguous bfloat16 ``[B, H, S, D]``; ``cu_seqlens`` is int32 ``[B, NDOC + 1]``
    (per sequence the document boundaries ``0 = c_0 < ... < c_NDOC = S``); ``window`` is an int ``W``.
    Query ``i`` of sequence ``b`` attends key ``j`` when both lie in the same document and
    ``i - W < j <= i``: ``o_i = sum_j softmax_j(q_i . k_j / sqrt(D)) v_j`` over those keys.
    Returns ``o`` as a new contiguous bfloat16 ``[B, H, S, D]``. See description.md.
    """
    raise NotImplementedError("implement run(q, k, v, cu_seqlens, window) with Triton kernels")
