"""Starting point for the ``moe_grouped_gemm_bwd`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(
    x: torch.Tensor, dy: torch.Tensor, w: torch.Tensor, sorted_slots: torch.Tensor, offsets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The backward of a MoE up projection: return ``(dx, dw)``, new contiguous bfloat16 ``[T, H]`` and ``[E, I, H]``.

    With ``K = dy.shape[0] // T``, permuted row ``p`` holds slot ``s = sorted_slots[p]`` (token ``s // K``) and
    belongs to expert ``e`` with ``offsets[e] <= p < offsets[e + 1]``. ``dx[t]`` sums ``dy[p] @ w[e]`` over token
    ``t``'s ``K`` rows; ``dw[e] = sum over e's rows of outer(dy[p], x[s // K])`` (zero for an expert without
    rows). See description.md.
    """
    raise NotImplementedError("implement run(x, dy, w, sorted_slots, offsets) with Triton kernels")
