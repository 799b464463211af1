"""Input generation for the ``chunked_gla`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

# Per-head base decays gamma = 1 - 10^-u with u spread evenly over [U_MIN, U_MAX]: 0.9 (memory of about
# 10 steps) to 0.9999 (about 10,000 steps), as RetNet spreads its heads' decays.
U_MIN: float = 1.0
U_MAX: float = 4.0
GATE_NOISE: float = 1.0  # the standard deviation of a step's gate logit around its head's base


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def base_decays(H: int) -> torch.Tensor:
    """The ``H`` per-head base decays ``1 - 10^-u``, ``u`` evenly spaced on [U_MIN, U_MAX] (float64)."""
    u = torch.linspace(U_MIN, U_MAX, H, dtype=torch.float64) if H > 1 else torch.tensor([U_MAX], dtype=torch.float64)
    return 1.0 - torch.pow(10.0, -u)


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"q", "k", "v", "g"}`` deterministically from ``seed``.

    * ``q``, ``k`` (bfloat16 ``[B, H, T, D]``): as GLA-style layers feed them, unit-normed per step after a
      normalisation: standard normal times per-head channel scales log-uniform on [0.5, 2] (some channels
      dominate, as trained projections make them), divided by the step's norm, then times a per-step norm
      log-uniform on [0.8, 1.25] (roughly, not exactly, unit).
    * ``v`` (bfloat16 ``[B, H, T, D]``): standard normal times per-head channel scales log-uniform on [0.5, 2].
    * ``g`` (float32 ``[B, H, T]``): the log decay of every step, ``logsigmoid(beta + GATE_NOISE z)`` with
      ``z`` standard normal per step (a data-dependent gate) and ``beta = logit(gamma)`` the head's base:
      the ``H`` base decays ``base_decays(H)`` (0.9 to 0.9999) in an order drawn for every batch row, so
      every call has short-memory heads (a step forgotten within tens of steps: per-step decays about
      0.3-0.995) and long-memory heads (about 0.998-0.99999 per step, the state carrying thousands of
      steps) and no head's memory is fixed.

    Sampling is in float32 with a ``torch.Generator`` on ``device``; the head order uses a CPU one.
    """
    B, H, T, D = (int(workload[a]) for a in ("B", "H", "T", "D"))
    if min(B, H, T, D) <= 0:
        raise ValueError(f"bad workload {dict(workload)}: every axis must be positive")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    cpu_gen = torch.Generator()
    cpu_gen.manual_seed(seed)

    def unit_rows() -> torch.Tensor:
        x = torch.randn((B, H, T, D), generator=gen, device=dev, dtype=torch.float32)
        x.mul_(_log_uniform((1, H, 1, D), 0.5, 2.0, gen, dev))
        x.div_(x.norm(dim=-1, keepdim=True))
        return x.mul_(_log_uniform((B, H, T, 1), 0.8, 1.25, gen, dev))

    q, k = unit_rows(), unit_rows()
    v = torch.randn((B, H, T, D), generator=gen, device=dev, dtype=torch.float32)
    v.mul_(_log_uniform((1, H, 1, D), 0.5, 2.0, gen, dev))
    gamma = base_decays(H)
    order = torch.stack([torch.randperm(H, generator=cpu_gen) for _ in range(B)])  # [B, H]
    beta = torch.log(gamma / (1.0 - gamma))[order].to(device=dev, dtype=torch.float32)  # [B, H]
    z = torch.randn((B, H, T), generator=gen, device=dev, dtype=torch.float32)
    g = torch.nn.functional.logsigmoid(beta[:, :, None] + GATE_NOISE * z)
    return {
        "q": q.to(torch.bfloat16).contiguous(),
        "k": k.to(torch.bfloat16).contiguous(),
        "v": v.to(torch.bfloat16).contiguous(),
        "g": g.contiguous(),
    }
