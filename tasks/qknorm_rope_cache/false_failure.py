"""Emulated designs of qknorm_rope_cache's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch


def emulate(
    ref: ModuleType,
    d: dict[str, Any],
    *,
    float32: bool = False,
    by_index: bool = False,
    arange_slots: bool = False,
    interleaved: bool = False,
    all_heads: bool = False,
    v_normed: bool = False,
) -> torch.Tensor:
    """The operator in float64 (float32 with ``float32``) with one of the cheats' mistakes; writes d's caches,
    returns q_out."""
    dtype = torch.float32 if float32 else torch.float64
    _, _, Hkv, D = d["k_cache"].shape
    T, R = d["qkv"].shape[0], d["cos_sin_cache"].shape[1]
    Hq = d["qkv"].shape[1] // D - 2 * Hkv
    x = d["qkv"].to(dtype)
    pos = torch.arange(T) if by_index else d["positions"]
    slots = torch.arange(T) if arange_slots else d["slot_mapping"]
    cs = d["cos_sin_cache"].to(dtype)[pos]
    cos, sin = cs[:, None, : R // 2], cs[:, None, R // 2 :]

    def norm(h: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
        dims = (-2, -1) if all_heads else (-1,)
        h = h / torch.sqrt(h.square().mean(dim=dims, keepdim=True) + 1e-6)
        return h if w is None else h * w.to(dtype)

    def rope(h: torch.Tensor) -> torch.Tensor:
        rot, rest = h[..., :R], h[..., R:]
        if interleaved:
            e, o = rot[..., 0::2], rot[..., 1::2]
            out = torch.stack((e * cos - o * sin, o * cos + e * sin), dim=-1).flatten(-2)
        else:
            lo, hi = rot[..., : R // 2], rot[..., R // 2 :]
            out = torch.cat((lo * cos - hi * sin, hi * cos + lo * sin), dim=-1)
        return torch.cat((out, rest), dim=-1)

    q = rope(norm(x[:, : Hq * D].reshape(T, Hq, D), d["q_norm_weight"]))
    k = rope(norm(x[:, Hq * D : (Hq + Hkv) * D].reshape(T, Hkv, D), d["k_norm_weight"]))
    v = x[:, (Hq + Hkv) * D :].reshape(T, Hkv, D)
    if v_normed:
        v = norm(v, None)
    d["k_cache"].view(-1, Hkv, D)[slots] = k.to(torch.bfloat16)
    d["v_cache"].view(-1, Hkv, D)[slots] = v.to(torch.bfloat16)
    return q.to(torch.bfloat16)
