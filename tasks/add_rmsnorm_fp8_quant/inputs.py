"""Input generation for the ``add_rmsnorm_fp8_quant`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

EPS: float = 1e-6  # the RMSNorm epsilon, pinned by the task (reference.EPS)
GROUP: int = 128


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"x", "residual", "weight", "eps"}`` deterministically from ``seed``.

    * ``residual`` (bfloat16 ``[M, N]``): the residual stream, ``Z * r_i * s_j`` with ``Z`` iid
      standard normal, a per-token scale ``r_i`` log-uniform on [0.5, 4] and a per-channel scale
      ``s_j`` log-uniform on [0.5, 2]; ``max(1, N / 1024)`` channels at random positions carry
      "massive activations" (``s_j`` log-uniform on [8, 40]), as residual streams of large models do.
      Their groups get scales 4-20x their neighbours'.
    * ``x`` (bfloat16 ``[M, N]``): the sublayer's output added to the stream, ``Z' * q_i * t_j`` with
      ``q_i = r_i`` times log-uniform [0.1, 1] (a sublayer output is smaller than the stream) and an
      independent per-channel ``t_j`` log-uniform on [0.5, 2]; no outlier channels.
    * ``weight`` (bfloat16 ``[N]``): the RMSNorm gain, positive and log-uniform on [0.05, 2] (trained
      gains of pre-projection norms spread over more than a decade).
    * ``eps``: 1e-6, the only accepted value.

    Everything is sampled in float32 with a ``torch.Generator`` on ``device``.
    """
    M, N = int(workload["M"]), int(workload["N"])
    if not (M > 0 and N > 0 and N % GROUP == 0):
        raise ValueError(f"need M > 0 and N a positive multiple of {GROUP}, got M={M}, N={N}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    rows = _log_uniform((M, 1), 0.5, 4.0, gen, dev)
    channels = _log_uniform((1, N), 0.5, 2.0, gen, dev)
    massive = torch.randperm(N, generator=gen, device=dev)[: max(1, N // 1024)]
    channels[0, massive] = _log_uniform((massive.numel(),), 8.0, 40.0, gen, dev)
    residual = torch.randn((M, N), generator=gen, device=dev, dtype=torch.float32).mul_(rows).mul_(channels)
    x_rows = rows * _log_uniform((M, 1), 0.1, 1.0, gen, dev)
    x = torch.randn((M, N), generator=gen, device=dev, dtype=torch.float32)
    x.mul_(x_rows).mul_(_log_uniform((1, N), 0.5, 2.0, gen, dev))
    weight = _log_uniform((N,), 0.05, 2.0, gen, dev)
    return {
        "x": x.to(torch.bfloat16).contiguous(),
        "residual": residual.to(torch.bfloat16).contiguous(),
        "weight": weight.to(torch.bfloat16).contiguous(),
        "eps": EPS,
    }
