"""Starting point for the ``moe_permute`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(
    hidden: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, expert_out: torch.Tensor, num_experts: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Permute token rows by expert and merge the experts' outputs back (see description.md).

    Returns ``(permuted, offsets, combined)``: ``permuted`` bfloat16 ``[T K, H]`` (the slots ``s = t K + j``
    sorted stably by ``topk_ids``, each holding ``hidden[t]``), ``offsets`` int32 ``[num_experts + 1]`` (where
    each expert's rows start) and ``combined`` bfloat16 ``[T, H]`` (per token, the weighted sum of its slots'
    rows of ``expert_out``, which is in permuted order).
    """
    raise NotImplementedError("implement run(hidden, topk_ids, topk_weights, expert_out, num_experts) with Triton kernels")
