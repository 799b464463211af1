"""Reference semantics for the ``qknorm_rope_cache`` task.

The attention prologue of a Qwen3-style layer, as vLLM runs it after the fused QKV projection. Per
token ``t`` of ``qkv [T, (Hq + 2 Hkv) D]`` (split into ``q [Hq, D]``, ``k [Hkv, D]`` and ``v [Hkv, D]``)::

    rms(x)  = sqrt(mean over the head's D channels of x^2 + eps)      # eps = 1e-6, per head
    qn[h]   = q[h] / rms(q[h]) * q_norm_weight                           # RMSNorm of each q head
    kn[h]   = k[h] / rms(k[h]) * k_norm_weight                           # RMSNorm of each k head
    cos, sin = cos_sin_cache[positions[t], :R/2], cos_sin_cache[positions[t], R/2:]
    rope(x)[:R/2]  = x[:R/2] * cos - x[R/2:R] * sin                      # NeoX style: split halves
    rope(x)[R/2:R] = x[R/2:R] * cos + x[:R/2] * sin
    rope(x)[R:]    = x[R:]                                                # partial rotary: the rest passes
    q_out[t]                             = rope(qn)
    k_cache.view(-1, Hkv, D)[slot[t]]    = rope(kn)                      # paged KV cache, updated in place
    v_cache.view(-1, Hkv, D)[slot[t]]    = v                              # v is neither normed nor rotated

``slot_mapping[t] = block * 16 + offset`` is the flat slot of token ``t`` in the caches
``[num_blocks, 16, Hkv, D]``; every other slot keeps its value.
"""

from __future__ import annotations

import torch

EPS: float = 1e-6  # the RMSNorm epsilon of Qwen3's q_norm and k_norm
PAGE: int = 16  # tokens per cache block (vLLM's default block size)


def _check(
    qkv: torch.Tensor,
    q_norm_weight: torch.Tensor,
    k_norm_weight: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
) -> tuple[int, int, int, int]:
    """Raise ``ValueError`` unless the inputs meet the contract; return ``(Hq, Hkv, D, R)``."""
    if k_cache.ndim != 4 or k_cache.shape != v_cache.shape or k_cache.shape[1] != PAGE:
        raise ValueError(f"k_cache and v_cache must both be [num_blocks, {PAGE}, Hkv, D], got {tuple(k_cache.shape)}")
    _, _, Hkv, D = k_cache.shape
    if q_norm_weight.shape != (D,) or k_norm_weight.shape != (D,):
        raise ValueError(f"q_norm_weight and k_norm_weight must be [{D}]")
    if qkv.ndim != 2 or qkv.shape[1] % D != 0 or qkv.shape[1] // D <= 2 * Hkv:
        raise ValueError(f"qkv must be [T, (Hq + 2 * {Hkv}) * {D}], got {tuple(qkv.shape)}")
    T = qkv.shape[0]
    Hq = qkv.shape[1] // D - 2 * Hkv
    if Hq % Hkv != 0:
        raise ValueError(f"Hq ({Hq}) must be a multiple of Hkv ({Hkv})")
    if positions.shape != (T,) or slot_mapping.shape != (T,):
        raise ValueError("positions and slot_mapping must both be [T]")
    R = cos_sin_cache.shape[1] if cos_sin_cache.ndim == 2 else -1
    if R <= 0 or R % 2 != 0 or R > D:
        raise ValueError(f"cos_sin_cache must be [max_position, R] with R even and R <= {D}")
    for name, t, dtype in (
        ("qkv", qkv, torch.bfloat16),
        ("q_norm_weight", q_norm_weight, torch.bfloat16),
        ("k_norm_weight", k_norm_weight, torch.bfloat16),
        ("positions", positions, torch.int64),
        ("cos_sin_cache", cos_sin_cache, torch.float32),
        ("slot_mapping", slot_mapping, torch.int64),
        ("k_cache", k_cache, torch.bfloat16),
        ("v_cache", v_cache, torch.bfloat16),
    ):
        if t.dtype != dtype:
            raise ValueError(f"{name} must be {dtype}, got {t.dtype}")
    return Hq, Hkv, D, R


def _rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """vLLM's RMSNorm.forward_native: float32 statistics, cast back, then the weight in the input dtype."""
    orig_dtype = x.dtype
    x = x.to(torch.float32)
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    x = x * torch.rsqrt(variance + EPS)
    return x.to(orig_dtype) * weight


def _rotate_neox(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """vLLM's apply_rotary_emb_torch, NeoX style: ``x [T, H, R]``, ``cos``/``sin`` ``[T, R/2]``."""
    cos = cos.unsqueeze(-2).to(x.dtype)
    sin = sin.unsqueeze(-2).to(x.dtype)
    x1, x2 = torch.chunk(x, 2, dim=-1)
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    return torch.cat((o1, o2), dim=-1)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rotary_dim: int) -> torch.Tensor:
    """vLLM's RotaryEmbedding.forward_native for one of q or k: rotate the first rotary_dim channels."""
    x_rot = x[..., :rotary_dim]
    x_pass = x[..., rotary_dim:]
    x_rot = _rotate_neox(x_rot, cos, sin)
    return torch.cat((x_rot, x_pass), dim=-1)


def reference(
    qkv: torch.Tensor,
    q_norm_weight: torch.Tensor,
    k_norm_weight: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
) -> torch.Tensor:
    """Eager PyTorch as vLLM's Qwen3Attention writes it (forward_native paths); returns ``q_out``.

    Split qkv, view per head, RMSNorm q and k (float32 statistics, bfloat16 result times the bfloat16
    weight), gather cos/sin by position and rotate in bfloat16 (vLLM casts cos/sin to the query dtype),
    then scatter k and v into the paged caches (``index_put``), which are updated in place.
    Returns ``q_out``: a new contiguous bfloat16 ``[T, Hq, D]``.
    """
    Hq, Hkv, D, R = _check(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache)
    T = qkv.shape[0]
    q, k, v = qkv.split([Hq * D, Hkv * D, Hkv * D], dim=-1)
    q = _rms_norm(q.view(T, Hq, D), q_norm_weight)
    k = _rms_norm(k.view(T, Hkv, D), k_norm_weight)
    cos_sin = cos_sin_cache.index_select(0, positions)
    cos, sin = cos_sin.chunk(2, dim=-1)
    q = _rope(q, cos, sin, R)
    k = _rope(k, cos, sin, R)
    k_cache.view(-1, Hkv, D)[slot_mapping] = k
    v_cache.view(-1, Hkv, D)[slot_mapping] = v.view(T, Hkv, D)
    return q.contiguous()


def exact(
    qkv: torch.Tensor,
    q_norm_weight: torch.Tensor,
    k_norm_weight: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
) -> torch.Tensor:
    """Float64 oracle: the same operator with every intermediate in float64 and no intermediate rounding.

    Returns ``q_out`` in float64. The caches stay bfloat16 (they are state): the written k is rounded
    once from float64, v is copied; every other slot is left as it was.
    """
    Hq, Hkv, D, R = _check(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache)
    T = qkv.shape[0]
    x = qkv.double()
    q = x[:, : Hq * D].reshape(T, Hq, D)
    k = x[:, Hq * D : (Hq + Hkv) * D].reshape(T, Hkv, D)
    cs = cos_sin_cache.double()[positions]
    cos, sin = cs[:, None, : R // 2], cs[:, None, R // 2 :]

    def norm_rope(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = h / torch.sqrt(h.square().mean(dim=-1, keepdim=True) + EPS) * w.double()
        lo, hi, rest = h[..., : R // 2], h[..., R // 2 : R], h[..., R:]
        return torch.cat((lo * cos - hi * sin, hi * cos + lo * sin, rest), dim=-1)

    k_cache.view(-1, Hkv, D)[slot_mapping] = norm_rope(k, k_norm_weight).to(k_cache.dtype)
    v_cache.view(-1, Hkv, D)[slot_mapping] = qkv[:, (Hq + Hkv) * D :].reshape(T, Hkv, D)
    return norm_rope(q, q_norm_weight)
