"""Input generation for the ``moe_grouped_gemm_bwd`` task.

A training step's MoE layer as a trained router leaves it: per token, softmax router logits with a per-expert
bias (log-normal popularity: some experts get several times their share, others little) and the top-``K``
experts (distinct per token); one expert, drawn per call, receives no token at all (a collapsed expert, which
real MoE training sees, and which makes every call exercise an empty group). The slots ``t K + j`` are sorted
stably by expert (``sorted_slots``) and ``offsets`` marks each expert's rows.

Scales: ``x`` is an RMSNorm'd activation (standard normal times per-channel gains on [0.5, 2]); ``w`` an up
projection as initialised (standard deviation ``1 / sqrt(H)``) times a per-expert factor on [0.7, 1.4];
``dy`` a backward gradient: standard normal times ``1e-3`` times the slot's routing weight (the combine's
backward scales every slot's gradient by its weight: rows differ by up to ~10x). Drawn from a
``torch.Generator`` on ``device`` seeded with ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

POPULARITY_SIGMA = 0.6  # log-normal spread of the experts' load
GRAD_SCALE = 1e-3  # typical size of an activation gradient in bfloat16 training


def routing(T: int, K: int, E: int, gen: torch.Generator, dev: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(sorted_slots int64 [T K], offsets int64 [E + 1], the slots' routing weights float32 [T K])."""
    bias = torch.randn(E, generator=gen, device=dev) * POPULARITY_SIGMA
    bias[torch.randint(0, E, (1,), generator=gen, device=dev)] = -math.inf  # the expert that gets no token
    logits = torch.randn((T, E), generator=gen, device=dev) + bias
    top, ids = torch.topk(torch.softmax(logits, dim=-1), K, dim=-1)
    weights = (top / top.sum(dim=-1, keepdim=True)).flatten()
    order = torch.argsort(ids.flatten(), stable=True)
    counts = torch.bincount(ids.flatten(), minlength=E)
    offsets = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
    return order, offsets, weights


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"x", "dy", "w", "sorted_slots", "offsets"}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    T, K, E, H, F = (workload[k] for k in ("T", "K", "E", "H", "I"))
    order, offsets, weights = routing(T, K, E, gen, dev)
    gains = torch.pow(10.0, (torch.rand(H, generator=gen, device=dev) - 0.5) * 2 * math.log10(2.0))
    x = torch.randn((T, H), generator=gen, device=dev) * gains
    strength = torch.pow(10.0, (torch.rand((E, 1, 1), generator=gen, device=dev) - 0.5) * 2 * math.log10(1.4))
    w = torch.randn((E, F, H), generator=gen, device=dev) * strength / math.sqrt(H)
    dy = torch.randn((T * K, F), generator=gen, device=dev) * GRAD_SCALE * weights[order][:, None]
    return {
        "x": x.to(torch.bfloat16).contiguous(),
        "dy": dy.to(torch.bfloat16).contiguous(),
        "w": w.to(torch.bfloat16).contiguous(),
        "sorted_slots": order.to(torch.int32).contiguous(),
        "offsets": offsets.to(torch.int32).contiguous(),
    }
