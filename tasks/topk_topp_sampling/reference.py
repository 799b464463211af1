"""Reference semantics for the ``topk_topp_sampling`` task.

One decoding step of a serving engine: for each of ``B`` requests, the next token is drawn from the model's
distribution over the vocabulary after top-k and then top-p (nucleus) filtering, each request with its own
``k`` and ``p``::

    keep_k = logits >= (the k-th largest logit of the row)           # ties at the cut kept
    q      = softmax(logits over keep_k)                             # the top-k distribution
    keep_p = { token t : q-mass of the tokens with a larger logit < p }   # the smallest top set reaching p
    draw   ~ softmax(logits over keep_k & keep_p)

``reference()`` is how vLLM's sampler writes it in PyTorch: a full sort of each row, the k-th value gathered,
softmax and cumulative sum over the sorted row for the top-p cut, the mask scattered back, a second softmax
and the exponential race (``probs / Exp(1)`` noise, argmax) seeded by ``seed``. Ties at the top-p cut are kept
together (every token equal to the smallest kept logit is kept), so the law does not depend on how the sort
orders equal values.

The outputs are random draws: the harness checks their law (task.toml ``[sampling]``), not their values.
``target_probs()`` is the law in float64; ``draw_intervals()`` gives the harness each draw's interval of the
target CDF, the tokens taken in order of decreasing probability (ties by index).
"""

from __future__ import annotations

import torch


def _check(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor) -> tuple[int, int]:
    """(B, V), or ``ValueError`` unless the inputs meet the contract."""
    if logits.ndim != 2 or logits.dtype != torch.float32:
        raise ValueError(f"logits must be float32 [B, V], got {logits.dtype} {tuple(logits.shape)}")
    B, V = logits.shape
    if top_k.shape != (B,) or top_k.dtype != torch.int32:
        raise ValueError(f"top_k must be int32 [{B}], got {top_k.dtype} {tuple(top_k.shape)}")
    if top_p.shape != (B,) or top_p.dtype != torch.float32:
        raise ValueError(f"top_p must be float32 [{B}], got {top_p.dtype} {tuple(top_p.shape)}")
    return B, V


def reference(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    """vLLM's top-k/top-p sampler: ``logits`` float32 ``[B, V]``, ``top_k`` int32 ``[B]`` (1..V), ``top_p``
    float32 ``[B]`` (0, 1]; a new int64 ``[B]`` of drawn token ids (the same seed, the same draws)."""
    V = _check(logits, top_k, top_p)[1]
    logits_sort = logits.sort(dim=-1, descending=False).values
    # top-k: everything below the k-th largest value of the row is masked (values equal to it are kept)
    kth = logits_sort.gather(1, (V - top_k.long()).clamp(min=0).unsqueeze(1))
    logits_sort = logits_sort.masked_fill(logits_sort < kth, float("-inf"))
    # top-p over the top-k distribution: drop the low tail whose cumulative mass is at most 1 - p
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = probs_sort.cumsum(dim=-1)
    drop = probs_sum <= 1 - top_p.unsqueeze(1)
    drop[:, -1] = False  # the most likely token always stays
    # the smallest kept logit is the cut: every token equal to it stays too (ties are not split by the sort)
    cutoff = logits_sort.masked_fill(drop, float("inf")).amin(dim=-1, keepdim=True)
    filtered = logits.masked_fill(logits < cutoff, float("-inf"))
    probs = filtered.softmax(dim=-1)
    # the exponential race: argmax of p_i / E_i with E_i ~ Exp(1) draws i with probability p_i
    gen = torch.Generator(device=logits.device).manual_seed(seed)
    noise = torch.empty_like(probs).exponential_(generator=gen)
    return probs.div(noise).argmax(dim=-1)


def target_probs(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """The law of each row's draw in float64 ``[B, V]``: top-k (ties at the cut kept), then top-p with the
    mass of strictly larger logits compared with p (ties kept or dropped together), renormalised."""
    B, V = _check(logits, top_k, top_p)
    x = logits.double() + 0.0  # -0.0 -> +0.0: equal values compare equal below
    vals, _ = x.sort(dim=-1, descending=True)
    kth = vals.gather(1, (top_k.long().clamp(1, V) - 1).unsqueeze(1))
    kept = x >= kth
    q = x.masked_fill(~kept, float("-inf")).softmax(dim=-1)
    q_sorted, order = q.sort(dim=-1, descending=True)
    v_sorted = x.gather(1, order)
    before = q_sorted.cumsum(dim=-1) - q_sorted  # mass strictly before each position
    # a tie group's mass "strictly larger" is the mass before its first member
    starts = torch.ones_like(v_sorted, dtype=torch.bool)
    starts[:, 1:] = v_sorted[:, 1:] != v_sorted[:, :-1]
    first = torch.where(starts, torch.arange(V, device=x.device).expand(B, V), 0).cummax(dim=-1).values
    larger = before.gather(1, first)
    keep_sorted = (larger < top_p.double().unsqueeze(1)) & (q_sorted > 0)
    keep = torch.zeros_like(kept).scatter(1, order, keep_sorted)
    return x.masked_fill(~keep, float("-inf")).softmax(dim=-1)


def draw_intervals(outputs: dict[str, torch.Tensor], inputs: dict[str, object]) -> torch.Tensor:
    """For each row's draw, the interval [F(t-), F(t)] of the target CDF at the drawn token t, tokens in order
    of decreasing target probability (ties by index); float64 ``[B, 2]``. An empty interval: a token the
    target law never draws. ``ValueError`` for a token id outside the vocabulary."""
    logits, top_k, top_p = inputs["logits"], inputs["top_k"], inputs["top_p"]
    assert isinstance(logits, torch.Tensor) and isinstance(top_k, torch.Tensor) and isinstance(top_p, torch.Tensor)
    probs = target_probs(logits, top_k, top_p)
    B, V = probs.shape
    tokens = outputs["tokens"].to(probs.device).long()
    if tokens.shape != (B,):
        raise ValueError(f"tokens must be [{B}], got {tuple(tokens.shape)}")
    bad = (tokens < 0) | (tokens >= V)
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0])
        raise ValueError(f"token id {int(tokens[row])} at row {row} is outside the vocabulary [0, {V})")
    q_sorted, order = probs.sort(dim=-1, descending=True, stable=True)
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(V, device=probs.device).expand(B, V))
    cdf = q_sorted.cumsum(dim=-1)
    at = rank.gather(1, tokens.unsqueeze(1)).squeeze(1)
    hi = cdf.gather(1, at.unsqueeze(1)).squeeze(1)
    q = probs.gather(1, tokens.unsqueeze(1)).squeeze(1)
    lo = torch.where(q > 0, hi - q, hi)
    return torch.stack([lo, hi], dim=1).cpu()
