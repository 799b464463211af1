"""Expert solution for ``rejection_sampler``: one program per request, the vocabulary read only at the end.

The reference walks the batch in Python, request by request: a handful of small kernels each (gathers, a
comparison, a search for the first rejection, a subtraction over the vocabulary, ``torch.multinomial``), so a
batch of 1024 requests costs thousands of launches, and every residual is materialised. What the step needs
is little:

* the acceptance test of draft i reads two numbers, p_i(x_i) and q_i(x_i): gather them for all D drafts at
  once, draw D uniforms from Philox, and the first rejection is a min over the drafts that fail u * q >= p;
* only the first rejected position n needs a distribution over the vocabulary, the residual
  max(p_n - q_n, 0) (or the bonus distribution p_D when all D were accepted): one pass over two rows of V,
  never normalised, drawn by the exponential race argmax(w / E), E = -log(U) ~ Exp(1), which draws token v
  with probability w_v / sum(w).

One program handles one request: D gathers, one pass over V (8 V bytes at most) and D + 1 stores. The random
numbers come from tl.rand keyed by the call's seed: offsets [0, B (D + 1)) for the acceptance uniforms (one
per request and draft), then B (D + 1) + b V + v for the final draw of request b, so no two uses share one.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 2048
NUM_WARPS = 8


@triton.jit
def _first_rejection(draft_ptr, target_ptr, ids_ptr, b, D, V, seed, DPAD: tl.constexpr):
    """The number of accepted drafts of request b (its first rejected position, or D), and its draft ids."""
    steps = tl.arange(0, DPAD)
    live = steps < D
    ids = tl.load(ids_ptr + b * D + steps, mask=live, other=0)
    q = tl.load(draft_ptr + (b * D + steps).to(tl.int64) * V + ids, mask=live, other=1.0)
    p = tl.load(target_ptr + (b * (D + 1) + steps).to(tl.int64) * V + ids, mask=live, other=1.0)
    u = tl.rand(seed, b * (D + 1) + steps)
    rejected = live & (u * q >= p)  # accepted with probability min(1, p / q)
    return tl.min(tl.where(rejected, steps, D), axis=0), ids


@triton.jit
def _final_token(draft_ptr, target_ptr, b, n, B, D, V, seed, BLOCK: tl.constexpr):
    """The recovered token (residual at step n < D) or the bonus token (target at step D), by exponential race."""
    target_row = target_ptr + (b * (D + 1) + n).to(tl.int64) * V
    draft_row = draft_ptr + (b * D + n).to(tl.int64) * V  # never read when n = D
    draft_len = tl.where(n < D, V, 0)  # the residual subtracts the draft's row; the bonus step has none
    base = B * (D + 1) + b * V
    best_score = tl.full((), -1.0, tl.float32)
    best_index = tl.full((), 0, tl.int32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        valid = offs < V
        p = tl.load(target_row + offs, mask=valid, other=0.0)
        q = tl.load(draft_row + offs, mask=offs < draft_len, other=0.0)
        weight = tl.maximum(p - q, 0.0)  # exactly 0 where p <= q: those tokens are never drawn
        score = tl.where(weight > 0, weight / -tl.log(tl.rand(seed, base + offs)), -1.0)
        block_best = tl.max(score, axis=0)
        block_index = tl.argmax(score, axis=0, tie_break_left=True)
        take = block_best > best_score
        best_index = tl.where(take, start + block_index, best_index)
        best_score = tl.where(take, block_best, best_score)
    return best_index


@triton.jit
def _rejection_sample_kernel(
    draft_ptr, target_ptr, ids_ptr, out_ptr, B, D, V, seed, BLOCK: tl.constexpr, DPAD: tl.constexpr
):
    b = tl.program_id(0)
    n, ids = _first_rejection(draft_ptr, target_ptr, ids_ptr, b, D, V, seed, DPAD)
    token = _final_token(draft_ptr, target_ptr, b, n, B, D, V, seed, BLOCK)
    steps = tl.arange(0, DPAD)
    row = tl.where(steps < n, ids, tl.where(steps == n, token.to(tl.int64), -1))
    tl.store(out_ptr + b * (D + 1) + steps, row, mask=steps < D + 1)


def run(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor, seed: int) -> torch.Tensor:
    """Verify every request's drafts; int64 ``[B, D + 1]``: accepted drafts, the final token, then -1."""
    B, D, V = draft_probs.shape
    tokens = torch.empty((B, D + 1), dtype=torch.int64, device=draft_probs.device)
    _rejection_sample_kernel[(B,)](
        draft_probs, target_probs, draft_ids, tokens, B, D, V, seed,
        BLOCK=min(BLOCK, triton.next_power_of_2(V)), DPAD=triton.next_power_of_2(D + 1), num_warps=NUM_WARPS,
    )
    return tokens
