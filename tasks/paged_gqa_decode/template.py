"""Starting point for the ``paged_gqa_decode`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401
import triton.language as tl  # noqa: F401


def run(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """Decode attention over a paged KV cache: return ``o``.

    ``q`` is bfloat16 ``[B, Hq, D]`` (one query token per sequence); ``k_cache`` and ``v_cache`` are
    bfloat16 ``[NP, 16, Hkv, D]``; ``page_table`` is int32 ``[B, max_pages]`` and ``seq_lens`` int32
    ``[B]``. Token ``t < seq_lens[b]`` of sequence ``b`` is at ``[page_table[b, t // 16], t % 16]`` in
    the caches, and query head ``h`` uses KV head ``h // (Hq // Hkv)``.
    ``o[b, h] = softmax(scale * q[b, h] . K_b^T) @ V_b`` as a new contiguous bfloat16 ``[B, Hq, D]``.
    See description.md.
    """
    raise NotImplementedError("implement run(q, k_cache, v_cache, page_table, seq_lens, scale) with Triton kernels")
