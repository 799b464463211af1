"""Emulated designs of mla_decode's false-failure study (false_failure.toml)."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import torch


def absorbed(
    ref: ModuleType,
    d: dict[str, Any],
    *,
    scale_without_rope: bool = False,
    rope: bool = True,
    wuk_transposed: bool = False,
    last_half_only: bool = False,
) -> torch.Tensor:
    """The absorbed operator in float64 with one of the cheats' changes, rounded to bfloat16."""
    f = torch.float64
    _, H, DN = d["q_nope"].shape
    DC, DR = d["kv_c"].shape[2], d["q_pe"].shape[2]
    w = d["w_uk"].to(f)
    if wuk_transposed:
        w = w.reshape(H, DC, DN).transpose(1, 2)
    q_lat = torch.einsum("bhn,hnc->bhc", d["q_nope"].to(f), w)
    start = d["kv_c"].shape[1] // 2 if last_half_only else 0
    c, kp = d["kv_c"].to(f)[:, start:], d["k_pe"].to(f)[:, start:]
    s = torch.einsum("bhc,blc->bhl", q_lat, c)
    if rope:
        s = s + torch.einsum("bhr,blr->bhl", d["q_pe"].to(f), kp)
    s = s * (1.0 / math.sqrt(DN) if scale_without_rope else 1.0 / math.sqrt(DN + DR))
    o_lat = torch.einsum("bhl,blc->bhc", torch.softmax(s, dim=-1), c)
    return torch.einsum("bhc,hcv->bhv", o_lat, d["w_uv"].to(f)).to(torch.bfloat16)
