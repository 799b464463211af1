"""Input generation for the ``fused_linear_ce`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

IGNORE_INDEX: int = -100
MARGIN_LO: float = -6.0  # target logit minus the row's expected log-sum-exp, drawn per token in [LO, HI)
MARGIN_HI: float = 6.0
ZIPF_EXPONENT: float = 1.1  # target frequencies fall as rank^-1.1 (natural-language token frequencies)


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def _zipf_targets(BT: int, V: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """BT token ids drawn with probability proportional to rank^-1.1 over a random ranking of the vocabulary.

    Drawn by inverting the distribution function (uniforms from ``gen``, a binary search in the cumulative
    weights, summed on the CPU in float64), never with ``torch.multinomial``: on a GPU its draws with
    replacement differ from one call to the next under the same generator seed, and the harness makes each
    trial's inputs twice (in the checker and in the solution's process) and needs the same bytes both times.
    """
    weights = torch.arange(1, V + 1, dtype=torch.float64).pow(-ZIPF_EXPONENT)
    cdf = torch.cumsum(weights, dim=0)
    cdf = (cdf / cdf[-1]).to(device)
    u = torch.rand((BT,), generator=gen, device=device, dtype=torch.float64)
    ranks = torch.searchsorted(cdf, u, right=True).clamp_(max=V - 1)
    order = torch.randperm(V, generator=gen, device=device)
    return order[ranks]


def _ignored(BT: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """A bool mask of ignored positions: the batch is cut into documents, each starting with a masked prompt.

    Document lengths are uniform on [L/2, 3L/2] with L = max(4, BT // 16); each document masks its first
    max(1, floor(q * length)) positions with q uniform on [0.05, 0.6]. About a third of the tokens are
    ignored, at least one per document; the last token of every document is kept.
    """
    base = max(4, BT // 16)
    mask = torch.zeros(BT, dtype=torch.bool, device=device)
    start = 0
    while start < BT:
        u = torch.rand(2, generator=gen, device=device).tolist()
        length = min(BT - start, max(2, int(base * (0.5 + u[0]))))
        masked = min(length - 1, max(1, int((0.05 + 0.55 * u[1]) * length)))
        mask[start : start + masked] = True
        start += length
    return mask


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"h", "W", "targets"}`` deterministically from ``seed``, shaped like a trained LM head.

    * ``W`` (bfloat16 ``[V, D]``): rows ``N(0, 1) * s_v / ||gamma||`` with a per-token scale ``s_v``
      log-uniform on [0.8, 2] (frequent tokens have larger embeddings), so that a logit has standard
      deviation ``s_v``: at D 4096 the entries' standard deviation is about 0.017, the order of Llama-3
      8B's ``lm_head``.
    * ``h`` (bfloat16 ``[BT, D]``): the final RMSNorm's output ``gamma * (Z + c)`` with ``Z`` iid standard
      normal, a gain ``gamma`` log-uniform on [0.5, 2] per channel and a shared direction ``c`` (standard
      normal, the same for every token: it gives each vocabulary entry a bias, as unigram frequency does).
      Each kept token's row is then moved along its target's row of ``W`` so that its target logit is
      the row's expected log-sum-exp plus a margin uniform on [-6, 6): the model is sure of some tokens
      (probability up to 1 - e^-6), unsure of others (down to e^-6); the mean loss is about 2-3 nats.
    * ``targets`` (int64 ``[BT]``): Zipf-distributed token ids (repeats are common, so several rows add
      into the same row of ``dW``), with -100 (ignore_index) at masked prompt positions (``_ignored``).

    Everything is sampled in float32 with a ``torch.Generator`` on ``device``, then rounded.
    """
    BT, D, V = int(workload["BT"]), int(workload["D"]), int(workload["V"])
    if not (BT >= 2 and D > 0 and V >= 2):
        raise ValueError(f"need BT >= 2, D > 0 and V >= 2, got BT={BT}, D={D}, V={V}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    gamma = _log_uniform((D,), 0.5, 2.0, gen, dev)
    scale = _log_uniform((V, 1), 0.8, 2.0, gen, dev)
    W = torch.randn((V, D), generator=gen, device=dev, dtype=torch.float32).mul_(scale / gamma.norm())
    W = W.to(torch.bfloat16)
    Wf = W.float()
    shared = torch.randn((D,), generator=gen, device=dev, dtype=torch.float32)
    h = torch.randn((BT, D), generator=gen, device=dev, dtype=torch.float32).add_(shared).mul_(gamma)
    targets = _zipf_targets(BT, V, gen, dev)
    ignored = _ignored(BT, gen, dev)
    # Expected log-sum-exp of a row: the shared bias plus a Gaussian part of variance s_v^2 per entry.
    bias = Wf @ (gamma * shared)
    expected_lse = torch.logsumexp(bias + 0.5 * scale.squeeze(1).square(), dim=0)
    margin = MARGIN_LO + (MARGIN_HI - MARGIN_LO) * torch.rand((BT,), generator=gen, device=dev, dtype=torch.float32)
    w_t = Wf[targets]
    current = (h * w_t).sum(dim=1)
    step = (expected_lse + margin - current) / w_t.square().sum(dim=1)
    h.add_(torch.where(ignored, torch.zeros_like(step), step).unsqueeze(1) * w_t)
    targets = torch.where(ignored, torch.full_like(targets, IGNORE_INDEX), targets)
    return {"h": h.to(torch.bfloat16).contiguous(), "W": W.contiguous(), "targets": targets.contiguous()}
