"""Reference semantics for the ``rejection_sampler`` task.

Speculative decoding's verification step (Leviathan et al. 2023; Chen et al. 2023), as serving engines run it
for a batch of ``B`` requests, each with ``D`` draft tokens ``x_0 .. x_{D-1}`` proposed by a small model with
probabilities ``q_i`` and scored by the target model with probabilities ``p_0 .. p_D``::

    for i in 0 .. D-1:
        accept x_i with probability min(1, p_i(x_i) / q_i(x_i))
        at the first rejection: draw the recovered token from norm(max(p_i - q_i, 0)), stop
    if every draft was accepted: draw a bonus token from p_D

The output row holds the accepted drafts, then the recovered or bonus token, then ``-1`` (no token) up to
``D + 1`` entries. Every emitted token is distributed as the target model would have drawn it.

``reference()`` is the loop over requests that PyTorch model code writes (vLLM's first rejection sampler had
this shape): per request, the acceptance ratios of its drafts as one vector, the first rejection found, and
``torch.multinomial`` on the residual or the bonus distribution, all random numbers from a generator seeded
by ``seed``. The output is random: the harness checks its law (task.toml ``[sampling]``) with
``draw_intervals()``, which orders a row's outcomes by the number of accepted drafts, then by the final token's
probability.
"""

from __future__ import annotations

import torch

NO_TOKEN = -1


def _check(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor) -> tuple[int, int, int]:
    """(B, D, V), or ``ValueError`` unless the inputs meet the contract."""
    if draft_probs.ndim != 3 or draft_probs.dtype != torch.float32:
        raise ValueError(f"draft_probs must be float32 [B, D, V], got {draft_probs.dtype} {tuple(draft_probs.shape)}")
    B, D, V = draft_probs.shape
    if target_probs.shape != (B, D + 1, V) or target_probs.dtype != torch.float32:
        raise ValueError(
            f"target_probs must be float32 [{B}, {D + 1}, {V}], got {target_probs.dtype} {tuple(target_probs.shape)}"
        )
    if draft_ids.shape != (B, D) or draft_ids.dtype != torch.int64:
        raise ValueError(f"draft_ids must be int64 [{B}, {D}], got {draft_ids.dtype} {tuple(draft_ids.shape)}")
    return B, D, V


def reference(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor, seed: int) -> torch.Tensor:
    """A new int64 ``[B, D + 1]``: each request's accepted drafts, its recovered or bonus token, then -1."""
    B, D, _ = _check(draft_probs, target_probs, draft_ids)
    gen = torch.Generator(device=draft_probs.device).manual_seed(seed)
    out = torch.full((B, D + 1), NO_TOKEN, dtype=torch.int64, device=draft_probs.device)
    steps = torch.arange(D, device=draft_probs.device)
    for b in range(B):
        ids = draft_ids[b]
        p = target_probs[b, steps, ids]
        q = draft_probs[b, steps, ids]
        u = torch.rand(D, generator=gen, device=draft_probs.device)
        rejected = torch.nonzero(u * q >= p)  # accept iff u < p / q (always where p >= q)
        n = int(rejected[0]) if rejected.numel() else D
        out[b, :n] = ids[:n]
        if n < D:
            residual = (target_probs[b, n] - draft_probs[b, n]).clamp(min=0)
            out[b, n] = torch.multinomial(residual, 1, generator=gen)[0]
        else:
            out[b, D] = torch.multinomial(target_probs[b, D], 1, generator=gen)[0]
    return out


def _outcome_masses(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor) -> torch.Tensor:
    """P(exactly n drafts accepted) per row, float64 ``[B, D + 1]``."""
    B, D, _ = draft_probs.shape
    steps = torch.arange(D, device=draft_probs.device)
    p = target_probs.double()[:, steps, :].gather(2, draft_ids.unsqueeze(2)).squeeze(2)
    q = draft_probs.double()[:, steps, :].gather(2, draft_ids.unsqueeze(2)).squeeze(2)
    accept = torch.where(q > 0, (p / q).clamp(max=1.0), 1.0)
    reach = torch.cat([torch.ones(B, 1, dtype=torch.float64, device=p.device), accept.cumprod(dim=1)], dim=1)
    stop = torch.cat([1.0 - accept, torch.ones(B, 1, dtype=torch.float64, device=p.device)], dim=1)
    return reach * stop


def final_law(draft_probs: torch.Tensor, target_probs: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """The law of the final token of each row given n accepted drafts: the normalised residual at step n < D,
    the target's bonus distribution at n = D; float64 ``[B, V]``."""
    B, D, _ = draft_probs.shape
    rows = torch.arange(B, device=draft_probs.device)
    p = target_probs.double()[rows, n]
    q = torch.zeros_like(p)
    early = n < D
    q[early] = draft_probs.double()[rows[early], n[early]]
    residual = (p - q).clamp(min=0.0)
    total = residual.sum(dim=1, keepdim=True)
    return torch.where(total > 0, residual / total.clamp(min=1e-300), 0.0)


def draw_intervals(outputs: dict[str, torch.Tensor], inputs: dict[str, object]) -> torch.Tensor:
    """Each row's outcome (n accepted drafts, final token t) as an interval of its CDF, outcomes ordered by n,
    then by t's probability (decreasing, ties by id); float64 ``[B, 2]``. ``ValueError`` for a row that is not an
    outcome at all (accepted entries that differ from the drafts, a token id outside the vocabulary, entries
    after the final token other than -1)."""
    draft_probs, target_probs, draft_ids = inputs["draft_probs"], inputs["target_probs"], inputs["draft_ids"]
    assert isinstance(draft_probs, torch.Tensor) and isinstance(target_probs, torch.Tensor)
    assert isinstance(draft_ids, torch.Tensor)
    B, D, V = _check(draft_probs, target_probs, draft_ids)
    tokens = outputs["tokens"].to(draft_probs.device)
    if tokens.shape != (B, D + 1):
        raise ValueError(f"tokens must be [{B}, {D + 1}], got {tuple(tokens.shape)}")
    emitted = tokens != NO_TOKEN
    count = emitted.sum(dim=1)  # n + 1
    positions = torch.arange(D + 1, device=tokens.device).expand(B, D + 1)
    if bool((emitted != (positions < count.unsqueeze(1))).any()) or bool((count == 0).any()):
        row = int(torch.nonzero((emitted != (positions < count.unsqueeze(1))).any(dim=1) | (count == 0))[0])
        raise ValueError(f"row {row} is not accepted drafts, one final token, then -1: {tokens[row].tolist()}")
    n = count - 1
    prefix_ok = (tokens[:, :D] == draft_ids) | (positions[:, :D] >= n.unsqueeze(1))
    if not bool(prefix_ok.all()):
        row = int(torch.nonzero(~prefix_ok.all(dim=1))[0])
        raise ValueError(f"row {row} emits as accepted a token that is not its draft: {tokens[row].tolist()}")
    final = tokens.gather(1, n.unsqueeze(1)).squeeze(1)
    if bool(((final < 0) | (final >= V)).any()):
        row = int(torch.nonzero((final < 0) | (final >= V))[0])
        raise ValueError(f"row {row}'s final token {int(final[row])} is outside the vocabulary [0, {V})")
    masses = _outcome_masses(draft_probs, target_probs, draft_ids)
    before_n = masses.cumsum(dim=1).gather(1, n.unsqueeze(1)).squeeze(1) - masses.gather(1, n.unsqueeze(1)).squeeze(1)
    mass_n = masses.gather(1, n.unsqueeze(1)).squeeze(1)
    law = final_law(draft_probs, target_probs, n)
    q_sorted, order = law.sort(dim=-1, descending=True, stable=True)
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(V, device=law.device).expand(B, V))
    cdf = q_sorted.cumsum(dim=-1)
    hi_in = cdf.gather(1, rank.gather(1, final.unsqueeze(1))).squeeze(1)
    q_t = law.gather(1, final.unsqueeze(1)).squeeze(1)
    width = mass_n * q_t
    lo = before_n + mass_n * (hi_in - q_t)
    hi = torch.where(width > 0, lo + width, lo)
    return torch.stack([lo, hi], dim=1).cpu()
