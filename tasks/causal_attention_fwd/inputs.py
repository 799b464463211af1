"""Input generation for the ``causal_attention_fwd`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

OUTLIER_FRACTION: float = 1 / 16  # channels of q and k with a large scale (as rotary q/k have)
OUTLIER_GAIN: float = 3.0


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def _channel_scales(H: int, D: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """``[1, H, 1, D]`` per-head channel scales: log-uniform on [0.5, 2], a random 1/16 of them x3."""
    scales = _log_uniform((1, H, 1, D), 0.5, 2.0, gen, device)
    outlier = torch.rand((1, H, 1, D), generator=gen, device=device) < OUTLIER_FRACTION
    return torch.where(outlier, scales * OUTLIER_GAIN, scales)


def _positional(S: int, D: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """``[S, D]`` unit-variance sinusoids ``sqrt(2) cos(s w_d + phi_d)``, frequencies log-spaced on [1e-3, 1].

    Shared by q and k (with a per-head weight), their dot product ``sum_d cos((i - j) w_d)`` falls off
    with the distance ``i - j``: nearby keys score higher, as rotary embeddings make them."""
    freq = torch.pow(10.0, torch.linspace(-3.0, 0.0, D, device=device))
    phase = 2 * math.pi * torch.rand((D,), generator=gen, device=device)
    pos = torch.arange(S, device=device, dtype=torch.float32)
    return math.sqrt(2.0) * torch.cos(pos[:, None] * freq[None, :] + phase[None, :])


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"q", "k", "v", "scale"}`` deterministically from ``seed``.

    * ``q`` (bfloat16 ``[B, Hq, S, D]``) and ``k`` (bfloat16 ``[B, Hkv, S, D]``): per head a mix
      ``c z + sqrt(1 - c^2) noise`` of a positional signal ``z`` (``_positional``: locality, nearby
      keys score higher) and iid standard normal noise, with ``c`` uniform on [0, 0.7] per key/value
      head (its query heads share it); per-head channel scales log-uniform on [0.5, 2] with a random
      1/16 of the channels x3 (outlier channels). ``q`` times a per-head temperature log-uniform on
      [0.5, 2] (flat and peaked heads); ``k`` plus a per-head bias vector of norm about
      ``2 sqrt(D)`` (real keys share a large common component: it shifts each query's scores alike,
      which the softmax ignores, but it makes the raw scores large: up to about 30 at temperature 2).
    * ``v`` (bfloat16 ``[B, Hkv, S, D]``): iid standard normal times per-head channel scales
      log-uniform on [0.5, 2], zero mean (the output is not dominated by a common value).
    * ``scale``: the softmax scale ``1 / sqrt(D)`` (a Python float).

    Everything is sampled in float32 with a ``torch.Generator`` on ``device``.
    """
    B, Hq, Hkv, S, D = (int(workload[a]) for a in ("B", "Hq", "Hkv", "S", "D"))
    if not (B > 0 and Hq > 0 and Hkv > 0 and S > 0 and D > 0) or Hq % Hkv != 0:
        raise ValueError(f"need positive B, Hq, Hkv, S, D with Hkv dividing Hq, got {B}, {Hq}, {Hkv}, {S}, {D}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    group = Hq // Hkv

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, device=dev, dtype=torch.float32)

    z = _positional(S, D, gen, dev)  # [S, D]
    c_kv = 0.7 * torch.rand((1, Hkv, 1, 1), generator=gen, device=dev)
    c_q = c_kv.repeat_interleave(group, dim=1)  # query head h mixes like its key/value head h // group
    q = c_q * z + (1.0 - c_q * c_q).sqrt() * normal(B, Hq, S, D)
    q.mul_(_channel_scales(Hq, D, gen, dev)).mul_(_log_uniform((1, Hq, 1, 1), 0.5, 2.0, gen, dev))
    k = c_kv * z + (1.0 - c_kv * c_kv).sqrt() * normal(B, Hkv, S, D)
    k.mul_(_channel_scales(Hkv, D, gen, dev)).add_(2.0 * normal(1, Hkv, 1, D))
    v = normal(B, Hkv, S, D).mul_(_log_uniform((1, Hkv, 1, D), 0.5, 2.0, gen, dev))
    return {
        "q": q.to(torch.bfloat16).contiguous(),
        "k": k.to(torch.bfloat16).contiguous(),
        "v": v.to(torch.bfloat16).contiguous(),
        "scale": 1.0 / math.sqrt(D),
    }
