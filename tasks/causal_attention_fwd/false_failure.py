"""Emulated designs of causal_attention_fwd's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

TILE = 32  # the cheats' key tile


def attention(ref: ModuleType, d: dict[str, Any], *, mode: str) -> torch.Tensor:
    """A wrong design's output: float64 math on the bfloat16 inputs (float32 exp for ``no_max``)."""
    q, k, v, scale = d["q"], d["k"], d["v"], d["scale"]
    Hq, S = q.shape[1], q.shape[2]
    Hkv = k.shape[1]
    heads = torch.arange(Hq)
    kv = heads % Hkv if mode == "gqa_modulo" else heads // (Hq // Hkv)
    kd, vd = k[:, kv].double(), v[:, kv].double()
    s = torch.matmul(q.double(), kd.transpose(-2, -1)) * scale
    i = torch.arange(S)[:, None]
    j = torch.arange(S)[None, :]
    if mode == "non_causal":
        visible = torch.ones((S, S), dtype=torch.bool)
    elif mode == "diagonal_unmasked":
        visible = j // TILE <= i // TILE
    else:
        visible = j <= i
    if mode == "no_max":
        p = torch.where(visible, torch.exp(s.float()), 0.0).double()
        return (torch.matmul(p, vd) / p.sum(-1, keepdim=True)).to(torch.bfloat16)
    p = torch.softmax(s.masked_fill(~visible, float("-inf")), dim=-1)
    return torch.matmul(p, vd).to(torch.bfloat16)
