"""Starting point for the ``causal_attention_fwd`` task: implement ``run`` with Triton."""

import torch
import triton
import triton.language as tl


def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal attention forward: return ``o``.

    ``q`` is contiguous bfloat16 ``[B, Hq, S, D]``; ``k`` and ``v`` are contiguous bfloat16
    ``[B, Hkv, S, D]`` with ``Hkv`` dividing ``Hq`` (query head ``h`` uses key/value head
    ``h // (Hq // Hkv)``); ``scale`` is the softmax scale (a float, ``1 / sqrt(D)``). Per batch and
    query head: ``o = softmax(scale * q @ k^T, keys j <= query i only) @ v`` as a new contiguous
    bfloat16 ``[B, Hq, S, D]``. See description.md.
    """
    raise NotImplementedError("implement run(q, k, v, scale) with Triton kernels")
