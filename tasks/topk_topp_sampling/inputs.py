"""Input generation for the ``topk_topp_sampling`` task.

``logits`` imitate a language model's last layer at one decoding step, rounded to bfloat16 as an LM head
computes them (then held in float32, as samplers take them), so equal values occur as they do in practice.
Each row has a head of ``HEAD`` plausible tokens whose logits fall off from a per-row peak drawn uniformly in
[``PEAK_LOW``, ``PEAK_HIGH``] by exponential gaps (mean ``HEAD_GAP``) and a tail over the whole vocabulary
with standard deviation ``TAIL_STD``: at the low peaks most mass is in the tail (a flat, uncertain step), at
the high ones a few tokens hold most of it.

``top_k`` and ``top_p`` are per request, as a serving batch mixes them: most rows use the common k = 50 and
p = 0.9; others draw k uniformly from 1..100, or k = V (top-k off), and p uniformly from [0.3, 1), or p = 1
(top-p off). A p below 1 is then moved to the middle of the interval of p values that keep the same set of
tokens (computed in float64): the kept set is the same for every p in that interval, so a sampler computing
the cumulative masses in float32 (errors near 1e-6) keeps the set the float64 law keeps. ``seed`` is drawn
in [0, 2^31 - 1). Everything comes from a ``torch.Generator`` on ``device`` seeded with ``seed``.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

HEAD = 64
HEAD_GAP = 2.0
PEAK_LOW, PEAK_HIGH = 8.0, 16.0
TAIL_STD = 1.5
COMMON_K, COMMON_P = 50, 0.9


def _logits(B: int, V: int, gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    logits = torch.randn((B, V), generator=gen, device=dev, dtype=torch.float32) * TAIL_STD
    head = min(HEAD, V)
    keys = torch.rand((B, V), generator=gen, device=dev)
    ids = keys.argsort(dim=-1, stable=True)[:, :head]  # distinct tokens per row; ties in a fixed order
    peak = PEAK_LOW + (PEAK_HIGH - PEAK_LOW) * torch.rand((B, 1), generator=gen, device=dev)
    gaps = torch.empty((B, head), device=dev).exponential_(1.0 / HEAD_GAP, generator=gen)
    logits.scatter_(1, ids, peak - gaps.cumsum(dim=-1))
    return logits.to(torch.bfloat16).to(torch.float32)


def _choice(B: int, gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    """A uniform per row, to pick the common value or another kind."""
    return torch.rand((B,), generator=gen, device=dev)


def _top_k(B: int, V: int, gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    pick = _choice(B, gen, dev)
    other = torch.randint(1, min(100, V) + 1, (B,), generator=gen, device=dev)
    k = torch.where(pick < 0.6, min(COMMON_K, V), torch.where(pick < 0.85, other, V))
    return k.to(torch.int32)


def snap_top_p(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Each p below 1 moved to the middle of the interval (lo, hi] of p values that keep the same tokens:
    lo and hi are consecutive values of "the top-k mass of the tokens with a larger logit" (float64)."""
    V = logits.shape[1]
    x = logits.double()
    vals, _ = x.sort(dim=-1, descending=True)
    kth = vals.gather(1, (top_k.long().clamp(1, V) - 1).unsqueeze(1))
    q = vals.masked_fill(vals < kth, float("-inf")).softmax(dim=-1)
    larger = q.cumsum(dim=-1) - q  # before each sorted position; a tie group's first position is its boundary
    starts = torch.ones_like(vals, dtype=torch.bool)
    starts[:, 1:] = vals[:, 1:] != vals[:, :-1]
    bounds = torch.where(starts & (q > 0), larger, float("inf"))
    p = top_p.double().unsqueeze(1)
    lo = torch.where(bounds < p, bounds, float("-inf")).amax(dim=-1)
    hi = torch.where((bounds >= p) & torch.isfinite(bounds), bounds, float("inf")).amin(dim=-1).clamp(max=1.0)
    snapped = ((lo + hi) / 2).to(torch.float32)
    return torch.where(top_p < 1.0, snapped, top_p)


def _top_p(logits: torch.Tensor, top_k: torch.Tensor, gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    B = logits.shape[0]
    pick = _choice(B, gen, dev)
    other = 0.3 + 0.7 * torch.rand((B,), generator=gen, device=dev)
    p = torch.where(pick < 0.6, COMMON_P, torch.where(pick < 0.85, other, 1.0)).to(torch.float32)
    return snap_top_p(logits, top_k, p)


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"logits": float32 [B, V], "top_k": int32 [B], "top_p": float32 [B], "seed": int}``, deterministic in
    ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    B, V = workload["B"], workload["V"]
    logits = _logits(B, V, gen, dev)
    top_k = _top_k(B, V, gen, dev)
    top_p = _top_p(logits, top_k, gen, dev)
    draw_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=gen, device=dev).item())
    return {"logits": logits.contiguous(), "top_k": top_k.contiguous(), "top_p": top_p.contiguous(), "seed": draw_seed}
