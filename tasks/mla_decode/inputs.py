"""Input generation for the ``mla_decode`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def _normal(shape: tuple[int, ...], gen: torch.Generator, device: torch.device) -> torch.Tensor:
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32)


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"q_nope", "q_pe", "kv_c", "k_pe", "w_uk", "w_uv"}`` (all bfloat16) deterministically from ``seed``.

    * ``kv_c`` ``[B, L, DC]``: the latent cache after its RMSNorm, ``rmsnorm(Z) * g`` with ``Z`` iid
      standard normal per token and a gain ``g`` per latent channel log-uniform on [0.5, 2].
    * ``k_pe`` ``[B, L, DR]``: the rotary key (not normalised), standard normal times a per-channel
      scale log-uniform on [0.5, 3] (a few large rope channels) and a per-token scale log-uniform on
      [0.5, 2].
    * ``w_uk`` ``[H, DN, DC]`` and ``w_uv`` ``[H, DC, DV]``: the two halves of ``kv_b_proj``, normal with
      standard deviation ``1 / sqrt(DC)`` (unit-scale keys and values), ``w_uk`` times a per-head factor
      log-uniform on [0.5, 2].
    * ``q_nope`` ``[B, H, DN]``: standard normal times a per-(sequence, head) scale log-uniform on
      [0.5, 3]; ``q_pe`` ``[B, H, DR]``: standard normal times a per-(sequence, head) scale log-uniform
      on [0.5, 2].

    With the softmax scale ``1 / sqrt(DN + DR)`` the logits' standard deviation ranges from about 0.3
    to 5 across heads: some heads spread their weight over most of the cache, others put it on a
    handful of tokens, and both the latent and the rope part move every score.
    Everything is sampled in float32 with a ``torch.Generator`` on ``device``, then cast to bfloat16.
    """
    B, L, H = int(workload["B"]), int(workload["L"]), int(workload["H"])
    DC, DR, DN, DV = int(workload["DC"]), int(workload["DR"]), int(workload["DN"]), int(workload["DV"])
    if min(B, L, H, DC, DR, DN, DV) <= 0:
        raise ValueError(f"every axis must be positive, got {dict(workload)}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    z = _normal((B, L, DC), gen, dev)
    z.mul_(torch.rsqrt(z.square().mean(dim=-1, keepdim=True) + 1e-6))  # the latent's RMSNorm
    kv_c = z.mul_(_log_uniform((DC,), 0.5, 2.0, gen, dev))
    k_pe = _normal((B, L, DR), gen, dev)
    k_pe.mul_(_log_uniform((DR,), 0.5, 3.0, gen, dev)).mul_(_log_uniform((B, L, 1), 0.5, 2.0, gen, dev))
    w_uk = _normal((H, DN, DC), gen, dev).mul_(_log_uniform((H, 1, 1), 0.5, 2.0, gen, dev) / math.sqrt(DC))
    w_uv = _normal((H, DC, DV), gen, dev).mul_(1.0 / math.sqrt(DC))
    q_nope = _normal((B, H, DN), gen, dev).mul_(_log_uniform((B, H, 1), 0.5, 3.0, gen, dev))
    q_pe = _normal((B, H, DR), gen, dev).mul_(_log_uniform((B, H, 1), 0.5, 2.0, gen, dev))
    tensors = {"q_nope": q_nope, "q_pe": q_pe, "kv_c": kv_c, "k_pe": k_pe, "w_uk": w_uk, "w_uv": w_uv}
    return {name: t.to(torch.bfloat16).contiguous() for name, t in tensors.items()}
