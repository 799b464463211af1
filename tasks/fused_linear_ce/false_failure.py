"""Emulated designs of fused_linear_ce's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def loss_and_grads(ref: ModuleType, d: dict[str, Any], *, cheat: str = "") -> Outputs:
    """The loss and gradients in float64 from float64 logits, G rounded to bfloat16 before the products, with one
    of the cheats' mistakes (none by default)."""
    h, W, t = d["h"], d["W"], d["targets"].clone()
    if cheat == "ignored_rows_kept":
        t = t.clamp_min(0)
    V = W.shape[0]
    seen = V // 64 * 64 if cheat == "vocab_prefix" else V
    z = h.double() @ W.double()[:seen].mT
    keep = t != -100
    n = float(len(t)) if cheat == "mean_over_all_tokens" else float(keep.sum())
    lse = bf16_state_lse(z) if cheat == "lse_bf16_state" else torch.logsumexp(z, dim=1)
    safe = torch.where(keep, t, torch.zeros_like(t))
    zt = (h.double() * W.double()[safe]).sum(dim=1)
    loss = torch.where(keep, lse - zt, torch.zeros_like(lse)).sum() / n
    g = torch.exp(z - lse[:, None])
    inside = keep & (safe < seen)
    g[inside.nonzero().squeeze(1), safe[inside]] -= 1.0
    g = (g * (keep.double() / n)[:, None]).to(torch.bfloat16).double()
    dh = g @ W.double()[:seen]
    rows = len(t) // 16 * 16 if cheat == "dw_tail_rows_dropped" else len(t)
    dW = torch.zeros_like(W, dtype=torch.float64)
    dW[:seen] = g[:rows].mT @ h.double()[:rows]
    return loss.float(), dh.to(torch.bfloat16), dW.to(torch.bfloat16)


def bf16_state_lse(z: torch.Tensor, step: int = 64) -> torch.Tensor:
    """The log-sum-exp with its running max and running sum rounded to bfloat16 after every step."""
    bf = torch.bfloat16
    m = torch.full((z.shape[0],), float("-inf"), dtype=torch.float64).to(bf)
    s = torch.zeros(z.shape[0], dtype=bf)
    for v0 in range(0, z.shape[1], step):
        block = z[:, v0 : v0 + step]
        m_new = torch.maximum(m.double(), block.max(dim=1).values).to(bf)
        grown = s.double() * torch.exp(m.double() - m_new.double())
        s = (grown + torch.exp(block - m_new.double()[:, None]).sum(dim=1)).to(bf)
        m = m_new
    return m.double() + s.double().log()


def bf16_logits(ref: ModuleType, d: dict[str, Any]) -> Outputs:
    """The reference's numerics without its bfloat16 CPU matmul (slow at large V): logits rounded to bfloat16."""
    h, W, targets = d["h"], d["W"], d["targets"]
    z = (h.double() @ W.double().mT).to(torch.bfloat16).double()
    keep = targets != -100
    n = float(keep.sum())
    lse = torch.logsumexp(z, dim=1)
    safe = torch.where(keep, targets, torch.zeros_like(targets))
    loss = torch.where(keep, lse - z.gather(1, safe[:, None])[:, 0], torch.zeros_like(lse)).sum() / n
    g = torch.exp(z - lse[:, None])
    g[keep.nonzero().squeeze(1), safe[keep]] -= 1.0
    g = (g * (keep.double() / n)[:, None]).to(torch.bfloat16).double()
    return loss.float(), (g @ W.double()).to(torch.bfloat16), (g.mT @ h.double()).to(torch.bfloat16)
