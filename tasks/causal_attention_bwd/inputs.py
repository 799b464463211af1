"""Input generation for the ``causal_attention_bwd`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

SMOOTH: int = 16  # width of the moving average that makes neighbouring positions alike (local heads)
FORWARD_CHUNK_ELEMS: int = 1 << 28  # float32 score elements per chunk of the forward (1 GB)


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def _smooth(x: torch.Tensor, width: int) -> torch.Tensor:
    """Causal moving average over the sequence axis (dim 2) of ``[B, H, S, D]``, renormalised to unit variance."""
    c = torch.cumsum(x, dim=2)
    shifted = torch.zeros_like(c)
    shifted[:, :, width:] = c[:, :, :-width]
    return (c - shifted) / math.sqrt(width)


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The float32 causal forward from bfloat16 ``q, k, v``: ``(o bfloat16, lse float32)``, as a forward saves them.

    Chunked over (batch, head) pairs so that the float32 scores stay near 1 GB.
    """
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
    hidden = torch.ones((S, S), dtype=torch.bool, device=q.device).triu(1)
    qf, kf, vf = (t.reshape(B * H, S, D) for t in (q, k, v))
    of, lf = o.view(B * H, S, D), lse.view(B * H, S)
    step = max(1, FORWARD_CHUNK_ELEMS // (S * S))
    for i in range(0, B * H, step):
        s = torch.matmul(qf[i : i + step].float(), kf[i : i + step].float().transpose(-2, -1)).mul_(scale)
        s.masked_fill_(hidden, float("-inf"))
        m = torch.logsumexp(s, dim=-1)
        lf[i : i + step] = m
        p = s.sub_(m.unsqueeze(-1)).exp_()
        of[i : i + step] = torch.matmul(p, vf[i : i + step].float()).to(torch.bfloat16)
        del s, p
    return o, lse


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"q", "k", "v", "o", "do", "lse", "scale"}`` deterministically from ``seed``.

    * ``q, k`` (bfloat16 ``[B, H, S, D]``): a shared positional signal ``z`` (iid normal smoothed over
      ``SMOOTH`` positions, so that near keys score higher: local heads) mixed with iid noise,
      ``c_h z + sqrt(1 - c_h^2) noise`` with ``c_h`` uniform on [0, 0.6] per head; per-channel scales
      log-uniform on [0.5, 2] (a few channels larger, as real q/k have); ``q`` times a per-head
      temperature log-uniform on [0.5, 2] (flat and peaked heads alike); ``k`` plus a per-head bias
      vector of norm about 2 sqrt(D) (real keys have a large common component; it shifts every score
      of a row alike, which the softmax ignores but ``lse`` carries).
    * ``v`` (bfloat16): iid normal times per-channel scales log-uniform on [0.5, 2].
    * ``o, lse``: the causal forward in float32 from the bfloat16 ``q, k, v`` (``forward``), ``o``
      rounded to bfloat16 and ``lse`` the natural-log log-sum-exp of the scaled masked scores, as a
      forward saves them; consistent with ``q, k, v``.
    * ``do`` (bfloat16): ``1e-2 r_i (Z + kappa_i o_i / rms(o_i))`` with ``Z`` iid normal, a per-row
      scale ``r_i`` log-uniform on [0.5, 2] and a per-row correlation ``kappa_i`` uniform on [-1, 1]
      with the output: real gradients correlate with the output, which makes
      ``delta = rowsum(do * o)`` matter (dropping it is far outside the tolerance).
    * ``scale``: ``1 / sqrt(D)``.

    Everything is sampled in float32 with a ``torch.Generator`` on ``device``.
    """
    B, H, S, D = (int(workload[a]) for a in ("B", "H", "S", "D"))
    if not (B > 0 and H > 0 and S > 0 and D > 0):
        raise ValueError(f"need positive B, H, S, D, got {B}, {H}, {S}, {D}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, device=dev, dtype=torch.float32)

    def uniform(lo: float, hi: float, *shape: int) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(shape, generator=gen, device=dev, dtype=torch.float32)

    z = _smooth(normal(B, H, S, D), min(SMOOTH, S))
    c = uniform(0.0, 0.6, 1, H, 1, 1)
    mix = (1.0 - c * c).sqrt()
    q = (c * z + mix * normal(B, H, S, D)) * _log_uniform((1, H, 1, D), 0.5, 2.0, gen, dev)
    q.mul_(_log_uniform((1, H, 1, 1), 0.5, 2.0, gen, dev))
    k = (c * z + mix * normal(B, H, S, D)) * _log_uniform((1, H, 1, D), 0.5, 2.0, gen, dev)
    k.add_(2.0 * normal(1, H, 1, D))
    v = normal(B, H, S, D).mul_(_log_uniform((1, H, 1, D), 0.5, 2.0, gen, dev))
    del z
    scale = 1.0 / math.sqrt(D)
    qb, kb, vb = (t.to(torch.bfloat16).contiguous() for t in (q, k, v))
    del q, k, v
    o, lse = forward(qb, kb, vb, scale)
    of = o.float()
    of.div_(of.square().mean(dim=-1, keepdim=True).sqrt().clamp_min(1e-30))
    do = normal(B, H, S, D).add_(uniform(-1.0, 1.0, B, H, S, 1) * of)
    do.mul_(1e-2 * _log_uniform((B, H, S, 1), 0.5, 2.0, gen, dev))
    return {"q": qb, "k": kb, "v": vb, "o": o, "do": do.to(torch.bfloat16).contiguous(), "lse": lse, "scale": scale}
