"""Starting point for the ``mla_decode`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401 (the agent writes its kernels here)
import triton.language as tl  # noqa: F401


def run(
    q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor
) -> torch.Tensor:
    """Multi-head latent attention decode: return ``o``, a new contiguous bfloat16 ``[B, H, DV]``.

    All inputs are contiguous bfloat16: queries ``q_nope [B, H, DN]`` and ``q_pe [B, H, DR]``, the
    cache ``kv_c [B, L, DC]`` and ``k_pe [B, L, DR]``, and the up-projections ``w_uk [H, DN, DC]`` and
    ``w_uv [H, DC, DV]``. Per sequence and head, with ``k_nope = kv_c @ w_uk[h]^T`` and
    ``v = kv_c @ w_uv[h]``: ``o[b, h] = softmax((q_nope . k_nope + q_pe . k_pe) / sqrt(DN + DR)) @ v``
    over all L tokens. See description.md.
    """
    raise NotImplementedError("implement run(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv) with Triton kernels")
