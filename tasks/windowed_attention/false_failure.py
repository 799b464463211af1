"""Emulated designs of windowed_attention's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

FULL_WINDOW_ROWS = 512  # the last rows of a registered-like shape, which see full windows


def flash_emulation(ref: ModuleType, d: dict[str, Any]) -> torch.Tensor:
    """A flash kernel's rounding on the GPU, in torch: fp32 scores and sums, bf16 (nearest) P and o."""
    q, k, v, cu_seqlens, window = d["q"], d["k"], d["v"], d["cu_seqlens"], d["window"]
    B, _, S, D = q.shape
    out = torch.empty_like(q)
    for b in range(B):
        blocked = ~ref.allowed_mask(cu_seqlens[b], S, window)
        s = (q[b].float() @ k[b].float().transpose(-1, -2)) / D**0.5
        s.masked_fill_(blocked, float("-inf"))
        p = torch.exp(s - s.amax(dim=-1, keepdim=True))
        o = p.to(torch.bfloat16).float() @ v[b].float() / p.sum(dim=-1, keepdim=True)
        out[b] = o.to(torch.bfloat16)
    return out


def masked_exact(ref: ModuleType, d: dict[str, Any], *, mistake: str) -> torch.Tensor:
    """exact() with a wrong mask: ``no_window``, ``window_off_by_one``, ``no_documents``, ``sorted_documents``
    (document d of n ending at d^2 S / n^2: ascending lengths)."""
    q, k, v, cu, window = d["q"], d["k"], d["v"], d["cu_seqlens"], d["window"]
    S = q.shape[2]
    if mistake == "no_window":
        return ref.exact(q, k, v, cu, S)
    if mistake == "window_off_by_one":
        return ref.exact(q, k, v, cu, window + 1)
    if mistake == "no_documents":
        return ref.exact(q, k, v, torch.tensor([[0, S]] * q.shape[0], dtype=torch.int32), window)
    if mistake == "sorted_documents":
        ndoc = cu.shape[1] - 1
        bounds = torch.tensor([i * i * (S // (ndoc * ndoc)) for i in range(ndoc + 1)], dtype=torch.int32)
        return ref.exact(q, k, v, bounds.expand(cu.shape[0], -1).contiguous(), window)
    raise ValueError(f"unknown mistake {mistake!r}")


def full_window_rows(ref: ModuleType, outputs: dict[str, torch.Tensor], inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The task's row views of the last FULL_WINDOW_ROWS query rows only."""
    return ref.rows({"o": outputs["o"][..., -FULL_WINDOW_ROWS:, :]}, inputs)
