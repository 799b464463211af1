"""Input generation for the ``moe_permute`` task.

Routing as a trained MoE router produces it: per token, softmax router logits ``z_te`` with a per-expert
bias (log-normal popularity: some experts get several times their share, some little), the top-K experts
(distinct per token) and their renormalised probabilities as weights (Qwen3/DeepSeek-style
``norm_topk_prob``). ``hidden`` is an RMSNorm'd activation (standard normal times per-channel gains on
[0.5, 2]) and ``expert_out`` the experts' outputs (standard normal times 0.5, in permuted order). Drawn from
a ``torch.Generator`` on ``device`` seeded with ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

POPULARITY_SIGMA = 0.6  # log-normal spread of the experts' load


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"hidden", "topk_ids", "topk_weights", "expert_out", "num_experts"}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    T, K, E, H = workload["T"], workload["K"], workload["E"], workload["H"]
    bias = torch.randn(E, generator=gen, device=dev) * POPULARITY_SIGMA
    logits = torch.randn((T, E), generator=gen, device=dev) + bias
    top, ids = torch.topk(torch.softmax(logits, dim=-1), K, dim=-1)
    weights = top / top.sum(dim=-1, keepdim=True)
    gains = torch.pow(10.0, (torch.rand(H, generator=gen, device=dev) - 0.5) * 2 * math.log10(2.0))
    hidden = torch.randn((T, H), generator=gen, device=dev) * gains
    expert_out = torch.randn((T * K, H), generator=gen, device=dev) * 0.5
    return {
        "hidden": hidden.to(torch.bfloat16).contiguous(),
        "topk_ids": ids.to(torch.int32).contiguous(),
        "topk_weights": weights.to(torch.float32).contiguous(),
        "expert_out": expert_out.to(torch.bfloat16).contiguous(),
        "num_experts": E,
    }
