"""Emulated designs of fused_moe_forward's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch


def _moe64(made: dict[str, Any], weights: torch.Tensor, ids: torch.Tensor, swap: bool = False) -> torch.Tensor:
    """sum_j weights[t, j] * expert_{ids[t, j]}(hidden[t]) in float64, rounded to bfloat16 (a kernel's store).
    `swap`: SiLU applied to the up half and multiplied by the gate half."""
    x = made["hidden"].double()
    inter = made["w2"].shape[2]
    out = torch.zeros_like(x)
    for e in torch.unique(ids).tolist():
        token, slot = torch.where(ids == e)
        gate, up = (x[token] @ made["w13"][e].double().T).split(inter, dim=1)
        act = torch.nn.functional.silu(up) * gate if swap else torch.nn.functional.silu(gate) * up
        out.index_add_(0, token, (act @ made["w2"][e].double().T) * weights[token, slot, None])
    return out.to(torch.bfloat16)


def moe(ref: ModuleType, made: dict[str, Any], *, mistake: str) -> torch.Tensor:
    """The layer in float64 with one mistake: ``not_renormalised`` (the chosen experts' full-softmax
    probabilities as weights), ``kth_dropped``, ``silu_on_up`` or ``busiest_dropped``."""
    logits = made["router_logits"].double()
    chosen, ids = torch.topk(logits, made["top_k"], dim=-1)
    weights = torch.softmax(chosen, dim=-1)
    if mistake == "not_renormalised":
        return _moe64(made, torch.softmax(logits, dim=-1).gather(1, ids), ids)
    if mistake == "kth_dropped":
        weights = weights.clone()
        weights[:, -1] = 0
        return _moe64(made, weights, ids)
    if mistake == "silu_on_up":
        return _moe64(made, weights, ids, swap=True)
    if mistake == "busiest_dropped":
        busiest = int(torch.bincount(ids.flatten()).argmax())
        return _moe64(made, torch.where(ids == busiest, 0.0, weights), ids)
    raise ValueError(f"unknown mistake {mistake!r}")
