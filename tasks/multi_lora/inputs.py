"""Input generation for the ``multi_lora`` task.

A mixed batch as a multi-LoRA server sees it: ``NSEG`` requests of random lengths (``NSEG - 1`` distinct cut
points, uniform; one token each when ``NSEG = T``, decoding), each with an adapter drawn from the ``A``
loaded ones or none (probability 0.1; at least one request without an adapter when ``NSEG >= 3``). ``x`` is
the layer's input (standard normal times per-channel gains on [0.5, 2]), ``base`` the base layer's output
(standard normal). The adapters follow LoRA's initialisation scales after training: ``lora_a`` normal with
standard deviation ``1 / sqrt(H)`` (so ``lora_a @ x`` is about unit-normal per rank), ``lora_b`` normal with
``0.25 / sqrt(R)``, times a per-adapter factor log-uniform on [0.5, 2]; with ``scaling = 2`` (alpha = 2 R)
the delta is about half the base's size, so every token's adapter matters. Drawn from a ``torch.Generator``
on ``device`` seeded with ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

NO_ADAPTER = 0.1  # share of requests served by the base model alone
SCALING = 2.0


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"x", "lora_a", "lora_b", "base", "seg_starts", "seg_adapters", "scaling"}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    T, H, S, A, R, N, G = (workload[k] for k in ("T", "H", "S", "A", "R", "N", "NSEG"))
    cuts = torch.randperm(T - 1, generator=gen, device=dev)[: G - 1] + 1
    starts = torch.cat([torch.zeros(1, device=dev, dtype=torch.int64), cuts.sort().values, torch.full((1,), T, device=dev)])
    adapters = torch.randint(0, A, (G,), generator=gen, device=dev)
    adapters = torch.where(torch.rand(G, generator=gen, device=dev) < NO_ADAPTER, torch.full_like(adapters, -1), adapters)
    if G >= 3:  # every batch of three requests or more has one served by the base model alone
        adapters[torch.randint(0, G, (1,), generator=gen, device=dev)] = -1
    gains = torch.pow(10.0, (torch.rand(H, generator=gen, device=dev) - 0.5) * 2 * math.log10(2.0))
    x = torch.randn((T, H), generator=gen, device=dev) * gains
    strength = torch.pow(10.0, (torch.rand((S, A, 1, 1), generator=gen, device=dev) - 0.5) * 2 * math.log10(2.0))
    lora_a = torch.randn((S, A, R, H), generator=gen, device=dev) / math.sqrt(H)
    lora_b = torch.randn((S, A, N, R), generator=gen, device=dev) * (0.25 / math.sqrt(R)) * strength
    base = torch.randn((T, S * N), generator=gen, device=dev)
    return {
        "x": x.to(torch.bfloat16).contiguous(),
        "lora_a": lora_a.to(torch.bfloat16).contiguous(),
        "lora_b": lora_b.to(torch.bfloat16).contiguous(),
        "base": base.to(torch.bfloat16).contiguous(),
        "seg_starts": starts.to(torch.int32).contiguous(),
        "seg_adapters": adapters.to(torch.int32).contiguous(),
        "scaling": SCALING,
    }
