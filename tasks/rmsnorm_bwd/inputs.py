"""Input generation for the ``rmsnorm_bwd`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

EPS: float = 1e-6  # the forward's epsilon, used only to build rstd


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"dY", "X", "W", "rstd"}`` deterministically from ``seed``.

    * ``X`` (bfloat16 ``[M, N]``): activations ``Z * r_i * s_j`` with ``Z`` iid
      standard normal, a per-row (token) scale ``r_i`` log-uniform on [0.3, 3]
      and a per-channel scale ``s_j`` log-uniform on [0.5, 2] (a few channels
      larger than others, as residual-stream activations have).
    * ``W`` (bfloat16 ``[N]``): ``1 + 0.25 * normal``, a trained gain around 1.
    * ``rstd`` (float32 ``[M]``): what the forward saves,
      ``1 / sqrt(mean(float32(X)^2) + 1e-6)``, computed from the bfloat16 ``X``.
    * ``dY`` (bfloat16 ``[M, N]``): an upstream gradient
      ``1e-2 * q_i * (Z' + k_i * y_i / rms(y_i))`` with ``Z'`` iid standard
      normal, a per-row scale ``q_i`` log-uniform on [0.5, 2] and a per-row
      correlation ``k_i`` uniform on [-1, 1] with the forward output
      ``y = X * rstd * W``. Real gradients correlate with the output, which
      makes the row term ``mean(dY * W * xhat)`` of dX of the same order as
      ``dY * W`` instead of ``O(1/sqrt(N))``.

    Everything is sampled in float32 with a ``torch.Generator`` on ``device``.
    """
    M, N = int(workload["M"]), int(workload["N"])
    if not (M > 0 and N > 0):
        raise ValueError(f"need M > 0 and N > 0, got M={M}, N={N}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.randn((M, N), generator=gen, device=dev, dtype=torch.float32)
    x.mul_(_log_uniform((M, 1), 0.3, 3.0, gen, dev)).mul_(_log_uniform((1, N), 0.5, 2.0, gen, dev))
    X = x.to(torch.bfloat16).contiguous()
    w = 1.0 + 0.25 * torch.randn((N,), generator=gen, device=dev, dtype=torch.float32)
    W = w.to(torch.bfloat16).contiguous()
    xf = X.float()
    rstd = torch.rsqrt(xf.square().mean(dim=1) + EPS).contiguous()
    y = xf * rstd.unsqueeze(1) * W.float()
    y = y / y.square().mean(dim=1, keepdim=True).sqrt().clamp_min(1e-30)
    k = 2.0 * torch.rand((M, 1), generator=gen, device=dev, dtype=torch.float32) - 1.0
    dy = torch.randn((M, N), generator=gen, device=dev, dtype=torch.float32).add_(k * y)
    dy.mul_(1e-2 * _log_uniform((M, 1), 0.5, 2.0, gen, dev))
    return {"dY": dy.to(torch.bfloat16).contiguous(), "X": X, "W": W, "rstd": rstd}
