"""Starting point for the ``fused_moe_forward`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, top_k: int) -> torch.Tensor:
    """The MoE block's forward: return ``out`` as a new contiguous bfloat16 ``[T, H]``.

    Per token ``t``: the ``top_k`` experts with the largest ``router_logits[t]`` (fp32), weights ``softmax`` of the
    logits renormalised over those experts, and ``out[t] = sum_j weight_j * w2[e_j] @ (silu(g) * u)`` with
    ``[g; u] = w13[e_j] @ hidden[t]`` (gate rows ``0 .. I-1`` of ``w13[e]``, up rows ``I .. 2 I - 1``). See
    description.md.
    """
    raise NotImplementedError("implement run(hidden, router_logits, w13, w2, top_k) with Triton kernels")
