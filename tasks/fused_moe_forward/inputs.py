"""Input generation for the ``fused_moe_forward`` task.

A MoE block's inputs at the scales of the named models:

* ``hidden``: the RMSNorm'd activation entering the block, standard normal times per-channel gains
  log-uniform on [0.5, 2] (RMS about 1.1).
* ``router_logits`` (fp32): a per-expert popularity bias (normal, standard deviation ``POPULARITY_SIGMA``:
  some experts get several times their share of the tokens, some little, as trained routers do) plus a
  standard normal per token and expert. Then every row's logits are spread so that sorted neighbours are at
  least ``GAP`` apart (the sorted values plus ``GAP`` times their rank): the top-K set is then the same
  whether a kernel ranks the logits or the fp32 probabilities, with a margin of about 10^4 fp32 roundings.
  ``input_scale`` multiplies the logits by 1000, which keeps the order and widens the gaps.
* ``w13`` ``[E, 2 I, H]`` (gate rows, then up rows) normal with standard deviation ``1 / sqrt(H)`` and ``w2``
  ``[E, H, I]`` with ``1 / sqrt(I)`` (the init scale ~ 1 / sqrt(fan_in)): gate and up are about unit-normal
  and every expert's output is a sizeable, distinct part of a token's row.

Drawn from a ``torch.Generator`` on ``device`` seeded with ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

POPULARITY_SIGMA = 0.6  # spread of the experts' logit bias (the load's imbalance)
GAP = 2e-3  # the smallest distance between two logits of a row


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"hidden", "router_logits", "w13", "w2", "top_k"}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    T, E, K, H, inter = (workload[k] for k in ("T", "E", "K", "H", "I"))
    gains = torch.pow(10.0, (torch.rand(H, generator=gen, device=dev) - 0.5) * 2 * math.log10(2.0))
    hidden = torch.randn((T, H), generator=gen, device=dev) * gains
    bias = torch.randn(E, generator=gen, device=dev) * POPULARITY_SIGMA
    logits = torch.randn((T, E), generator=gen, device=dev) + bias
    ranked, order = logits.sort(dim=-1, stable=True)  # ties in a fixed order: the inputs repeat bit for bit
    spread = ranked + GAP * torch.arange(E, device=dev, dtype=torch.float32)  # neighbours >= GAP apart
    logits = torch.empty_like(logits).scatter_(1, order, spread)
    w13 = torch.randn((E, 2 * inter, H), generator=gen, device=dev) / math.sqrt(H)
    w2 = torch.randn((E, H, inter), generator=gen, device=dev) / math.sqrt(inter)
    return {
        "hidden": hidden.to(torch.bfloat16).contiguous(),
        "router_logits": logits.to(torch.float32).contiguous(),
        "w13": w13.to(torch.bfloat16).contiguous(),
        "w2": w2.to(torch.bfloat16).contiguous(),
        "top_k": K,
    }
