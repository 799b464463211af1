"""Emulated designs of multi_lora's false-failure study (false_failure.toml): exact() on inputs with one of them
changed, rounded to bfloat16 as a kernel stores y."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch


def altered(ref: ModuleType, made: dict[str, Any], *, change: str) -> torch.Tensor:
    """``one_request_next_adapter``, ``scaling_dropped``, ``no_adapter_as_zero`` or ``shrink_rank_halved``."""
    changes: dict[str, Any]
    if change == "one_request_next_adapter":
        adapters = made["seg_adapters"].clone()
        used = (adapters >= 0).nonzero().flatten()
        adapters[used[0]] = (adapters[used[0]] + 1) % made["lora_a"].shape[1]
        changes = {"seg_adapters": adapters}
    elif change == "scaling_dropped":
        changes = {"scaling": 1.0}
    elif change == "no_adapter_as_zero":
        changes = {"seg_adapters": made["seg_adapters"].clamp_min(0)}
    elif change == "shrink_rank_halved":
        half = made["lora_a"].clone()
        half[:, :, half.shape[2] // 2 :] = 0
        changes = {"lora_a": half}
    else:
        raise ValueError(f"unknown change {change!r}")
    out: torch.Tensor = ref.exact(**{**made, **changes}).to(torch.bfloat16)
    return out
