"""Emulated designs of chunked_gla's false-failure study (false_failure.toml): the chunked form in float64 with
one design's arithmetic or mistake."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

CHUNK = 64


def bf(x: torch.Tensor) -> torch.Tensor:
    """``x`` rounded to bfloat16 (to nearest even), back in float64."""
    return x.to(torch.bfloat16).double()


def chunked(ref: ModuleType, made: dict[str, Any], *, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(o, final_state)``; ``o`` rounded to bfloat16.

    ``honest_bf16``: the expert's roundings (operands of the products in bfloat16, the state exact);
    ``bf16_state``: the same with the carried state rounded to bfloat16 after every chunk; ``no_state``:
    every chunk from a zero state; ``decay_once``: no decay inside a chunk, the carried state multiplied by
    the chunk's total decay; ``diagonal_excluded``: the mask j < i; ``future``: no mask inside the chunk;
    ``bf16_cumsum``: G accumulated step by step in bfloat16 from bfloat16 gates.
    """
    q, k, v, g = (made[n].double() for n in ("q", "k", "v", "g"))
    B, H, T, D = q.shape
    scale = D**-0.5
    state = torch.zeros((B, H, D, D), dtype=torch.float64)
    o = torch.empty((B, H, T, D), dtype=torch.float64)
    rounded = mode in ("honest_bf16", "bf16_state")
    for c0 in range(0, T, CHUNK):
        c1 = min(T, c0 + CHUNK)
        L = c1 - c0
        qc, kc, vc, gc = q[:, :, c0:c1], k[:, :, c0:c1], v[:, :, c0:c1], g[:, :, c0:c1]
        if mode == "bf16_cumsum":
            G = torch.empty_like(gc)
            running = torch.zeros((B, H), dtype=torch.bfloat16)
            for i in range(L):
                running = (running.double() + bf(gc[..., i])).to(torch.bfloat16)
                G[..., i] = running.double()
        else:
            G = gc.cumsum(-1)
        if mode == "no_state":
            state = torch.zeros_like(state)
        mask = torch.ones((L, L), dtype=torch.bool).tril(-1 if mode == "diagonal_excluded" else 0)
        if mode == "future":
            mask = torch.ones((L, L), dtype=torch.bool)
        if mode == "decay_once":
            decay, q_decayed = mask.double(), qc
        else:
            decay = (G[..., :, None] - G[..., None, :]).masked_fill(~mask, float("-inf")).exp()
            q_decayed = qc * G.exp()[..., None]
        scores = (qc @ kc.transpose(-1, -2)) * decay
        if rounded:
            o[:, :, c0:c1] = scale * (bf(scores) @ vc + bf(q_decayed) @ bf(state))
        else:
            o[:, :, c0:c1] = scale * (scores @ vc + q_decayed @ state)
        last = G[..., -1:]
        k_decayed = kc if mode == "decay_once" else kc * (last - G).exp()[..., None]
        state = state * last.exp()[..., None] + (bf(k_decayed) if rounded else k_decayed).transpose(-1, -2) @ vc
        if mode == "bf16_state":
            state = bf(state)
    return o.to(torch.bfloat16), state.float()
