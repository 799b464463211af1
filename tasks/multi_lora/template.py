"""Starting point for the ``multi_lora`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(
    x: torch.Tensor,
    lora_a: torch.Tensor,
    lora_b: torch.Tensor,
    base: torch.Tensor,
    seg_starts: torch.Tensor,
    seg_adapters: torch.Tensor,
    scaling: float,
) -> torch.Tensor:
    """Multi-adapter LoRA for a mixed batch: return ``y`` as a new contiguous bfloat16 ``[T, S N]``.

    Tokens ``seg_starts[g] .. seg_starts[g + 1] - 1`` use adapter ``a = seg_adapters[g]`` (``-1``: none); for
    each slice ``s``, ``y[t, s N:(s + 1) N] = base[t, s N:(s + 1) N] + scaling * lora_b[s, a] @ (lora_a[s, a] @ x[t])``
    (``y = base`` for tokens without an adapter). See description.md.
    """
    raise NotImplementedError("implement run(x, lora_a, lora_b, base, seg_starts, seg_adapters, scaling) with Triton kernels")
