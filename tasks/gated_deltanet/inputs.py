"""Input generation for the ``gated_deltanet`` task.

As a Gated DeltaNet layer (Qwen3-Next's linear attention) hands them to its kernel, before the l2norm:

* ``q``, ``k``: standard normal plus a per-head mean direction (``0.8 sqrt(D)`` long), so that two keys of one
  head have a cosine of about 0.4, as trained keys share a common component; that makes the chunk's
  triangular system far from the identity (the WY correction matters). Per-channel gains on [0.5, 2].
* ``v``: standard normal.
* ``beta = sigmoid(b)``, ``b`` standard normal: write strengths in (0, 1), most within (0.15, 0.85); bfloat16
  as the model computes it.
* ``g = -rate_h * softplus(a) / ln 2``, ``a`` standard normal (Mamba-2 / Gated DeltaNet's ``-A softplus(a +
  dt_bias)``): per-head time scales log-spaced from 0.003 (``alpha`` about 0.997, memory of hundreds of
  tokens) to 0.5 (about 0.6: a few tokens), times a data-dependent gate (0.2-3x). float32, as the model keeps
  it. Every call with two heads or more has slow and fast heads.

Drawn from a ``torch.Generator`` on ``device`` seeded with ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

SLOWEST, FASTEST = 0.003, 0.5  # the heads' decay rates (per token, at a median gate)
SHARED = 0.8  # the per-head mean direction's length, in units of sqrt(D)


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, torch.Tensor]:
    """``{"q", "k", "v", "g", "beta"}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    B, H, T, D = (workload[a] for a in ("B", "H", "T", "D"))

    def projected() -> torch.Tensor:
        mean = torch.randn((1, H, 1, D), generator=gen, device=dev)
        mean = mean * (SHARED * math.sqrt(D) / mean.norm(dim=-1, keepdim=True))
        gains = torch.pow(2.0, torch.rand((1, H, 1, D), generator=gen, device=dev) * 2 - 1)
        return ((torch.randn((B, H, T, D), generator=gen, device=dev) + mean) * gains).to(torch.bfloat16).contiguous()

    q, k = projected(), projected()
    v = torch.randn((B, H, T, D), generator=gen, device=dev).to(torch.bfloat16).contiguous()
    beta = torch.sigmoid(torch.randn((B, H, T), generator=gen, device=dev)).to(torch.bfloat16).contiguous()
    spread = torch.linspace(0.0, 1.0, H, device=dev) if H > 1 else torch.full((1,), 0.5, device=dev)
    jitter = (torch.rand(H, generator=gen, device=dev) - 0.5) * 0.2
    rate = SLOWEST * (FASTEST / SLOWEST) ** (spread + jitter).clamp(0.0, 1.0)
    gate = torch.nn.functional.softplus(torch.randn((B, H, T), generator=gen, device=dev)) / math.log(2.0)
    g = (-rate[None, :, None] * gate).float().contiguous()
    return {"q": q, "k": k, "v": v, "g": g, "beta": beta}
