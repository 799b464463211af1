"""Starting point for the ``chunked_gla`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401
import triton.language as tl  # noqa: F401


def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Gated linear attention with a scalar decay per head: return ``(o, final_state)``.

    ``q``, ``k``, ``v`` are contiguous bfloat16 ``[B, H, T, D]``; ``g`` is float32 ``[B, H, T]`` (log decays,
    ``<= 0``). Per ``(b, h)``, with a ``[D, D]`` state zero before the first step:
    ``S_t = exp(g_t) S_{t-1} + k_t^T v_t`` and ``o_t = D^-0.5 q_t S_t``. Returns ``o`` as a new contiguous
    bfloat16 ``[B, H, T, D]`` and ``final_state = S_T`` as a new contiguous float32 ``[B, H, D, D]``.
    See description.md.
    """
    raise NotImplementedError("implement run(q, k, v, g) with Triton kernels")
