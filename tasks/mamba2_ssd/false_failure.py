"""Emulated designs of mamba2_ssd's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

CHEAT_CHUNK = 16


def scan(ref: ModuleType, made: dict[str, Any], *, mistake: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrence in float64 with one mistake; y rounded to bfloat16 as a kernel stores it."""
    x, dt, A, D = made["x"].double(), made["dt"].double(), made["A"].double(), made["D"].double()
    batch, T, H, _P = x.shape
    G, N = made["Bm"].shape[2:]
    group = torch.arange(H) // (H // G)
    Bd, Cd = made["Bm"].double()[:, :, group], made["Cm"].double()[:, :, group]
    state = torch.zeros(batch, H, x.shape[3], N, dtype=torch.float64)
    y = torch.empty_like(x)
    for t in range(T):
        if mistake == "state_not_passed" and t % CHEAT_CHUNK == 0:
            state = torch.zeros_like(state)
        decay = torch.exp(dt[:, t] * A)[..., None, None]
        weight = torch.ones_like(dt[:, t]) if mistake == "dt_on_c" else dt[:, t]
        step = (weight[..., None] * x[:, t])[..., None] * Bd[:, t, :, None, :]
        state = decay * (state + step) if mistake == "segsum_off_by_one" else decay * state + step
        out = (state @ Cd[:, t, :, :, None]).squeeze(-1)
        if mistake == "dt_on_c":
            out = out * dt[:, t, :, None]
        y[:, t] = out if mistake == "d_skip_dropped" else out + D[:, None] * x[:, t]
    return y.to(torch.bfloat16), state.float()
