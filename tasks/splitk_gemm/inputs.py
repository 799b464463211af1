"""Input generation for the ``splitk_gemm`` task.

``a`` imitates the input of a projection at decode time, the output of an RMSNorm: per token, standard
normal hidden values with a few outlier channels about ``OUTLIER_GAIN`` times larger (the massive activations
of trained LLMs), divided by their root mean square (the norm), times the norm's learned per-channel weight
(log-uniform on [1/2, 2]). ``w`` imitates a trained projection: normal with standard deviation ``1 / sqrt(K)``
(the scale that keeps ``c`` near unit size), each output row scaled log-uniformly on [1/1.4, 1.4]. Every entry
of ``c`` then sums ``K`` terms of mixed signs: a spread of values near 1, none constant, each depending on
one row of ``a`` and one row of ``w``. Everything is drawn in float32 from a ``torch.Generator`` on ``device``
seeded with ``seed``, then rounded to bfloat16.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

OUTLIER_CHANNELS = 4  # at most this many channels of a with a large gain (one per 128 channels when K is small)
OUTLIER_GAIN = 8.0


def _gains(count: int, spread: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """``count`` float32 factors spread log-uniformly over [1 / spread, spread]."""
    u = torch.rand((count,), generator=gen, device=device, dtype=torch.float32)
    return torch.exp((2.0 * u - 1.0) * math.log(spread))


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"a": bfloat16 [M, K], "w": bfloat16 [N, K]}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    M, K, N = workload["M"], workload["K"], workload["N"]
    hidden = torch.randn((M, K), generator=gen, device=dev, dtype=torch.float32)
    outliers = torch.randperm(K, generator=gen, device=dev)[: min(OUTLIER_CHANNELS, K // 128)]
    hidden[:, outliers] *= OUTLIER_GAIN
    normed = hidden * torch.rsqrt(hidden.square().mean(dim=1, keepdim=True) + 1e-6)
    a = normed * _gains(K, 2.0, gen, dev)
    w = torch.randn((N, K), generator=gen, device=dev, dtype=torch.float32) * (_gains(N, 1.4, gen, dev)[:, None] / math.sqrt(K))
    return {"a": a.to(torch.bfloat16).contiguous(), "w": w.to(torch.bfloat16).contiguous()}
