"""Input generation for the ``rejection_sampler`` task.

The draft model's and the target model's next-token distributions at each of a request's ``D`` draft positions
(and the target's at position ``D``, for the bonus token), as float32 probabilities over the vocabulary. Each
position's target logits have a head of ``HEAD`` plausible tokens below a peak drawn in [``PEAK_LOW``,
``PEAK_HIGH``] (exponential gaps, mean ``HEAD_GAP``) over a tail of standard deviation ``TAIL_STD``, rounded to
bfloat16 as an LM head computes them; the draft model's logits are the target's plus Gaussian noise of standard
deviation ``DRAFT_NOISE`` (a smaller model that mostly agrees: 55-85% of drafts accepted). Both are softmaxed
in float32. The drafts are drawn from the draft distributions (``torch.multinomial``), as the draft model
proposed them. ``seed`` is drawn in [0, 2^31 - 1). Everything comes from a ``torch.Generator`` on ``device``
seeded with ``seed``.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

HEAD = 48
HEAD_GAP = 1.5
PEAK_LOW, PEAK_HIGH = 8.0, 14.0
TAIL_STD = 1.5
DRAFT_NOISE = 0.6


def _target_logits(rows: int, V: int, gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    logits = torch.randn((rows, V), generator=gen, device=dev, dtype=torch.float32) * TAIL_STD
    ids = torch.randint(0, V, (rows, min(HEAD, V)), generator=gen, device=dev)
    peak = PEAK_LOW + (PEAK_HIGH - PEAK_LOW) * torch.rand((rows, 1), generator=gen, device=dev)
    gaps = torch.empty(ids.shape, device=dev).exponential_(1.0 / HEAD_GAP, generator=gen)
    # ids may repeat within a row: the largest of a repeated id's values is kept (amax does not depend on the
    # order of the writes; a plain scatter_ on a GPU keeps an arbitrary one, and the inputs must repeat
    # bit for bit from a seed: the harness makes a trial's inputs again to check a call)
    logits.scatter_reduce_(1, ids, peak - gaps.cumsum(dim=-1), reduce="amax", include_self=False)
    return logits.to(torch.bfloat16).float()


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"draft_probs": float32 [B, D, V], "target_probs": float32 [B, D + 1, V], "draft_ids": int64 [B, D],
    "seed": int}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    B, D, V = workload["B"], workload["D"], workload["V"]
    target_logits = _target_logits(B * (D + 1), V, gen, dev).view(B, D + 1, V)
    noise = torch.randn((B, D, V), generator=gen, device=dev, dtype=torch.float32) * DRAFT_NOISE
    draft_logits = (target_logits[:, :D] + noise).to(torch.bfloat16).float()
    target_probs = target_logits.softmax(dim=-1)
    draft_probs = draft_logits.softmax(dim=-1)
    draft_ids = torch.multinomial(draft_probs.view(B * D, V), 1, generator=gen).view(B, D)
    draw_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=gen, device=dev).item())
    return {
        "draft_probs": draft_probs.contiguous(),
        "target_probs": target_probs.contiguous(),
        "draft_ids": draft_ids.contiguous(),
        "seed": draw_seed,
    }
