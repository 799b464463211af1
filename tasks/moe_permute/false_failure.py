"""Emulated designs of moe_permute's false-failure study (false_failure.toml): exact permuted rows and offsets, and
combined computed one way."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch


def _slot_rows(made: dict[str, Any], own_index: bool = False) -> torch.Tensor:
    """[T, K, H] float64: each slot's row of expert_out (at its permuted position, or at its own index)."""
    T, K = made["topk_ids"].shape
    order = torch.argsort(made["topk_ids"].flatten(), stable=True)
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel())
    index = torch.arange(order.numel()) if own_index else position
    return made["expert_out"].double().index_select(0, index).view(T, K, -1)


def _weighted(weights: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    return (rows * weights.double()[:, :, None]).sum(dim=1).to(torch.bfloat16)


def _bf16_sum(made: dict[str, Any]) -> torch.Tensor:
    rows, w = _slot_rows(made), made["topk_weights"].double()
    acc = torch.zeros(rows.shape[0], rows.shape[2], dtype=torch.bfloat16)
    for j in range(rows.shape[1]):
        acc = (acc.double() + w[:, j, None] * rows[:, j]).to(torch.bfloat16)
    return acc


def combined(ref: ModuleType, made: dict[str, Any], *, how: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(permuted, offsets, combined) with combined as ``how`` computes it."""
    permuted, offsets, _ = ref.exact(**made)
    w = made["topk_weights"]
    if how == "bf16_running_sum":
        out = _bf16_sum(made)
    elif how == "shifted_weights":
        out = _weighted(w.roll(1, dims=1), _slot_rows(made))
    elif how == "weights_ignored":
        out = _weighted(torch.ones_like(w), _slot_rows(made))
    elif how == "last_slot_dropped":
        out = _weighted(w[:, :-1], _slot_rows(made)[:, :-1])
    elif how == "unpermuted_rows":
        out = _weighted(w, _slot_rows(made, own_index=True))
    else:
        raise ValueError(f"unknown design {how!r}")
    return permuted.to(made["hidden"].dtype), offsets, out
