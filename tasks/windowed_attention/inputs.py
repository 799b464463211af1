"""Input generation for the ``windowed_attention`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

HEAVY_RATE: float = 1.0 / 256.0  # share of tokens whose keys attract attention (delimiters, sinks)
HEAVY_BONUS: float = 5.0  # the score such a key gains from the head's shared query direction


def doc_lengths(S: int, NDOC: int) -> list[int]:
    """The fixed multiset of document lengths of a workload: ``(2 d + 1) * S / NDOC^2`` for d < NDOC.

    The lengths sum to ``S`` (the odd numbers 1, 3, ..., 2 NDOC - 1 sum to ``NDOC^2``) and grow
    linearly, so a packed row mixes short and long documents (128 to 3968 tokens at S = 32768, NDOC = 16).
    Being fixed per workload, their squares sum to a closed form, which makes the roofline's count of
    attended pairs exact (task.toml). Their order is drawn per call (``make_inputs``).
    """
    if NDOC < 1 or S % (NDOC * NDOC):
        raise ValueError(f"need NDOC >= 1 and S divisible by NDOC^2, got S={S}, NDOC={NDOC}")
    unit = S // (NDOC * NDOC)
    return [(2 * d + 1) * unit for d in range(NDOC)]


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"q", "k", "v", "cu_seqlens", "window"}`` deterministically from ``seed``.

    * ``q``, ``k``, ``v`` (bfloat16 ``[B, H, S, D]``): post-rotary projections as a trained layer makes
      them. Every channel has its own scale per head, log-uniform on [0.5, 2] (a few channels larger
      than others); each query token has a norm scale log-uniform on [0.7, 1.4] and each head a
      temperature log-uniform on [0.6, 1.5], so the softmax ranges from broad to peaked across heads
      (scores with a standard deviation of about 0.8 to 2). About one token in 256 (the same
      positions in every head of a sequence) is a *heavy* key, like the delimiter and sink tokens real
      heads fixate on: its key has a large component along a direction ``u_h`` that every query of
      head ``h`` shares, which adds about 5 to its scores. A heavy key anywhere in a query's window
      takes a visible share of the attention, so a key wrongly let in at the window's edge, across a
      document boundary or past the diagonal moves that query's output well beyond the tolerance.
    * ``cu_seqlens`` (int32 ``[B, NDOC + 1]``): per sequence, the document boundaries
      ``0 = c_0 < c_1 < ... < c_NDOC = S``. The lengths are ``doc_lengths(S, NDOC)`` in an order
      drawn independently for every sequence (a random permutation), so the boundaries are runtime
      data: a solution that assumes any fixed order fails. ``NDOC = 1`` gives ``[[0, S], ...]``.
    * ``window`` (int): ``W`` from the workload; query ``i`` attends key ``j`` of its own document
      when ``i - W < j <= i`` (``W >= S``: no window, plain document-causal attention).

    Sampling is in float32 with a ``torch.Generator`` on ``device``; the document order uses a CPU one.
    """
    B, H, S, D = (int(workload[a]) for a in ("B", "H", "S", "D"))
    W, NDOC = int(workload["W"]), int(workload["NDOC"])
    if min(B, H, S, D, W, NDOC) <= 0:
        raise ValueError(f"bad workload {dict(workload)}: every axis must be positive")
    lengths = doc_lengths(S, NDOC)
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    cpu_gen = torch.Generator()
    cpu_gen.manual_seed(seed)

    def channel_scale() -> torch.Tensor:  # [1, H, 1, D]
        return _log_uniform((1, H, 1, D), 0.5, 2.0, gen, dev)

    u = torch.randn((1, H, 1, D), generator=gen, device=dev, dtype=torch.float32)
    u = u / u.norm(dim=-1, keepdim=True)  # the shared query direction of each head, unit norm
    heavy = (torch.rand((B, 1, S, 1), generator=gen, device=dev) < HEAVY_RATE).float()
    gamma = 4.0  # each query's component along u_h
    beta = HEAVY_BONUS / gamma * math.sqrt(D)  # a heavy key's component: gamma * beta / sqrt(D) = HEAVY_BONUS
    q = torch.randn((B, H, S, D), generator=gen, device=dev, dtype=torch.float32).mul_(channel_scale()).add_(gamma * u)
    q.mul_(_log_uniform((B, H, S, 1), 0.7, 1.4, gen, dev)).mul_(_log_uniform((1, H, 1, 1), 0.6, 1.5, gen, dev))
    k = torch.randn((B, H, S, D), generator=gen, device=dev, dtype=torch.float32).mul_(channel_scale())
    k.add_(heavy * beta * u)
    v = torch.randn((B, H, S, D), generator=gen, device=dev, dtype=torch.float32).mul_(channel_scale())
    cu = torch.zeros((B, NDOC + 1), dtype=torch.int32)
    for b in range(B):
        order = torch.randperm(NDOC, generator=cpu_gen).tolist()
        cu[b, 1:] = torch.tensor([lengths[i] for i in order], dtype=torch.int32).cumsum(0)
    return {
        "q": q.to(torch.bfloat16).contiguous(),
        "k": k.to(torch.bfloat16).contiguous(),
        "v": v.to(torch.bfloat16).contiguous(),
        "cu_seqlens": cu.to(dev),
        "window": W,
    }
