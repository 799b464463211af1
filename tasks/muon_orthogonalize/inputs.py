"""Input generation for the ``muon_orthogonalize`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

STEPS: int = 5


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"G": [B, M, N] bfloat16 contiguous, "steps": 5}`` deterministically from ``seed``.

    Each matrix imitates a weight gradient rather than iid noise::

        G[i] = s_i * diag(r_i) @ (Z_i + k_i / sqrt(M) * u_i v_i^T)

    * ``Z_i``: ``[M, N]`` iid standard normal;
    * ``u_i`` ``[M]``, ``v_i`` ``[N]``: iid standard normal, a rank-one
      "dominant direction" of strength ``k_i`` uniform on [0, 1.5), i.e. top
      singular value up to about 1.5 sqrt(N), near the bulk edge;
    * ``r_i``: per-row scales, log-uniform on [0.5, 2];
    * ``s_i``: per-matrix scale, log-uniform on [1e-3, 1e3], so the Frobenius
      normalisation sees magnitudes spanning six decades.

    Everything is sampled in float32 with a ``torch.Generator`` on ``device``
    seeded with ``seed``, then rounded to bfloat16. The matrices are never zero.

    The row-scale range and spike strength are deliberately moderate: when
    sigma_max(G) / ||G||_F lands near 0.3-0.5 (tiny M, a strong spike, or a few
    dominant rows), the first Polar Express step sends that direction to ~1.99,
    where the later polynomials are steep, and any float16 implementation's
    error is amplified ~1000x (see docs/tolerance-muon.md). At the registered
    shapes this ratio stays below ~0.05.
    """
    B, M, N = int(workload["B"]), int(workload["M"]), int(workload["N"])
    if not (B > 0 and 0 < M <= N):
        raise ValueError(f"need B > 0 and 0 < M <= N, got B={B}, M={M}, N={N}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    G = torch.randn((B, M, N), generator=gen, device=dev, dtype=torch.float32)
    u = torch.randn((B, M, 1), generator=gen, device=dev, dtype=torch.float32)
    v = torch.randn((B, 1, N), generator=gen, device=dev, dtype=torch.float32)
    k = 1.5 * torch.rand((B, 1, 1), generator=gen, device=dev, dtype=torch.float32)
    G.addcmul_(u * (k / math.sqrt(M)), v)
    G.mul_(_log_uniform((B, M, 1), 0.5, 2.0, gen, dev))
    G.mul_(_log_uniform((B, 1, 1), 1e-3, 1e3, gen, dev))
    return {"G": G.to(torch.bfloat16).contiguous(), "steps": STEPS}
