"""Input generation for the ``gemm_swiglu`` task.

``x`` imitates the input of an MLP block (the output of an RMSNorm): per row standard normal values
times per-channel gains log-uniform on [0.5, 2] (a norm's learned weight), a few channels with gains
near 8 (the outlier features of trained LLMs). ``w`` imitates a trained ``gate_up_proj``: normal with
standard deviation 0.02 (the init of Llama-style models, the scale trained weights keep), per output row
scaled log-uniformly on [0.5, 2]. The gate's pre-activations then have a standard deviation near
``0.02 sqrt(K)``, 1.3-1.7 at the registered sizes: silu works on both its linear and its curved part,
and no output is constant. Everything is drawn in float32 from a ``torch.Generator`` on ``device`` seeded
with ``seed``, then rounded to bfloat16.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

WEIGHT_STD = 0.02
OUTLIER_CHANNELS = 4  # channels of x with a large gain (at most this many; fewer when K is small)
OUTLIER_GAIN = 8.0


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"x": bfloat16 [M, K], "w": bfloat16 [2 I, K]}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    M, K, inter = workload["M"], workload["K"], workload["I"]
    gains = _log_uniform((K,), 0.5, 2.0, gen, dev)
    outliers = torch.randperm(K, generator=gen, device=dev)[: min(OUTLIER_CHANNELS, K // 16)]
    gains[outliers] = OUTLIER_GAIN
    x = torch.randn((M, K), generator=gen, device=dev, dtype=torch.float32) * gains
    rows = _log_uniform((2 * inter, 1), 0.5, 2.0, gen, dev)
    w = torch.randn((2 * inter, K), generator=gen, device=dev, dtype=torch.float32) * (WEIGHT_STD * rows)
    return {"x": x.to(torch.bfloat16).contiguous(), "w": w.to(torch.bfloat16).contiguous()}
