"""Starting point for the ``qknorm_rope_cache`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401
import triton.language as tl  # noqa: F401


def run(
    qkv: torch.Tensor,
    q_norm_weight: torch.Tensor,
    k_norm_weight: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
) -> torch.Tensor:
    """q/k RMSNorm, NeoX rotary and the paged KV-cache write: return ``q_out``.

    ``qkv`` is bfloat16 ``[T, (Hq + 2 Hkv) D]`` (q heads, k heads, v heads); the gains are bfloat16 ``[D]``;
    ``positions`` and ``slot_mapping`` are int64 ``[T]``; ``cos_sin_cache`` is float32 ``[P, R]`` (cos | sin);
    ``k_cache`` and ``v_cache`` are bfloat16 ``[NB, 16, Hkv, D]`` and are updated in place: token ``t``'s
    normalised and rotated k and its raw v go to flat slot ``slot_mapping[t]``, no other slot changes.
    Returns the normalised and rotated q as a new contiguous bfloat16 ``[T, Hq, D]``. See description.md.
    """
    raise NotImplementedError("implement run(qkv, q_norm_weight, ..., k_cache, v_cache) with Triton kernels")
