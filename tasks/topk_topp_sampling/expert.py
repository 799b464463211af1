"""Expert solution for ``topk_topp_sampling``: threshold search instead of a sort, one program per row.

The reference sorts every row of the vocabulary (151,936 floats) to find two cuts: the k-th largest logit
(top-k) and the smallest logit whose larger neighbours hold less than p of the top-k mass (top-p). Neither
cut needs the order of the whole row, only a value: the largest threshold t with

    top-k:  count(logits >= t) >= k            top-p:  mass(logits >= t, top-k kept) >= p * Z

where Z is the top-k mass. Both are monotone in t, so each threshold is found digit by digit over the 32
bits of an order-preserving integer key of the logit (a radix select): 4 bits per pass over the row, the 16
candidate prefixes of a pass counted (or weighed) together, 8 passes per threshold. Every comparison is
``>=`` on the keys, so equal logits are always kept or dropped together, the law the task defines, and the
result does not depend on any ordering of ties.

The draw needs no normalised probabilities either: the Gumbel-max trick picks argmax(logit + G) over the kept
tokens, G = -log(-log(U)) with U uniform from Philox (``tl.rand``) keyed by the call's seed and each token's
position, which draws token i with probability exp(logit_i) / sum over the kept tokens. The argmax breaks
ties towards the lowest index, so the same seed gives the same token.

One program handles one row: 17 passes over its logits (8 + 8 + 1), no sort, no intermediate tensor in
global memory; a row's 594 KB stay in L2 between passes while the programs in flight fit.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024  # logits per step of a pass
RADIX_BITS = 4  # key bits decided per pass: 16 candidate thresholds weighed together
NUM_WARPS = 8


@triton.jit
def _ordered_key(x):
    """An int32 key whose signed order is the order of the float32 values (-0.0 folded into +0.0)."""
    bits = (x + 0.0).to(tl.int32, bitcast=True)
    return tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)


@triton.jit
def _candidates(prefix, shift: tl.constexpr, RADIX_BITS: tl.constexpr):
    """The 16 thresholds of a pass as int32 keys: `prefix` (an unsigned 32-bit key held in int64) with each
    value of the next digit at `shift`."""
    digits = tl.arange(0, 1 << RADIX_BITS).to(tl.int64)
    unsigned = prefix + (digits << shift)
    return (unsigned - 2147483648).to(tl.int32), digits


@triton.jit
def _topk_threshold(row_ptr, V, k, BLOCK: tl.constexpr, RADIX_BITS: tl.constexpr):
    """The key of the k-th largest logit of the row (as an unsigned key in int64), and the row's max."""
    cols = tl.arange(0, BLOCK)
    prefix = tl.full((), 0, tl.int64)
    row_max = tl.full((), float("-inf"), tl.float32)
    for shift in tl.static_range(32 - RADIX_BITS, -1, -RADIX_BITS):
        cand, digits = _candidates(prefix, shift, RADIX_BITS)
        counts = tl.zeros((1 << RADIX_BITS,), tl.int32)
        for start in range(0, V, BLOCK):
            offs = start + cols
            valid = offs < V
            x = tl.load(row_ptr + offs, mask=valid, other=float("-inf"))
            if shift == 32 - RADIX_BITS:
                row_max = tl.maximum(row_max, tl.max(x, axis=0))
            key = _ordered_key(x)
            hit = (key[:, None] >= cand[None, :]) & valid[:, None]
            counts += tl.sum(hit.to(tl.int32), axis=0)
        # counts fall as the digit grows; keep the largest digit that still leaves k logits at or above it
        best = tl.max(tl.where(counts >= k, digits, 0), axis=0)
        prefix = prefix + (best << shift)
    return prefix, row_max


@triton.jit
def _topp_threshold(row_ptr, V, p, kth, row_max, BLOCK: tl.constexpr, RADIX_BITS: tl.constexpr):
    """The key of the smallest logit kept by top-p over the top-k tokens (keys >= `kth`), unsigned in int64."""
    cols = tl.arange(0, BLOCK)
    prefix = tl.full((), 0, tl.int64)
    total = tl.full((), 0.0, tl.float32)
    kth_key = (kth - 2147483648).to(tl.int32)
    for shift in tl.static_range(32 - RADIX_BITS, -1, -RADIX_BITS):
        cand, digits = _candidates(prefix, shift, RADIX_BITS)
        cand = tl.maximum(cand, kth_key)  # only top-k tokens carry mass
        mass = tl.zeros((1 << RADIX_BITS,), tl.float32)
        for start in range(0, V, BLOCK):
            offs = start + cols
            valid = offs < V
            x = tl.load(row_ptr + offs, mask=valid, other=float("-inf"))
            weight = tl.where(valid, tl.exp(x - row_max), 0.0)
            key = _ordered_key(x)
            mass += tl.sum(tl.where(key[:, None] >= cand[None, :], weight[:, None], 0.0), axis=0)
        if shift == 32 - RADIX_BITS:
            # the first pass's digit-0 candidate is kth itself: its mass is the top-k total Z, summed in the
            # same order as every later candidate's (so p = 1 keeps exactly the top-k set)
            total = tl.sum(tl.where(digits == 0, mass, 0.0), axis=0)
        best = tl.max(tl.where(mass >= p * total, digits, 0), axis=0)
        prefix = prefix + (best << shift)
    return tl.maximum(prefix, kth)


@triton.jit
def _topk_topp_sample_kernel(
    logits_ptr, top_k_ptr, top_p_ptr, out_ptr, V, stride_row, seed, BLOCK: tl.constexpr, RADIX_BITS: tl.constexpr
):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * stride_row
    k = tl.load(top_k_ptr + row)
    p = tl.load(top_p_ptr + row)
    kth, row_max = _topk_threshold(row_ptr, V, k, BLOCK, RADIX_BITS)
    cut = _topp_threshold(row_ptr, V, p, kth, row_max, BLOCK, RADIX_BITS)
    cut_key = (cut - 2147483648).to(tl.int32)
    # Gumbel-max over the kept tokens: one Philox uniform per (row, token), keyed by the call's seed
    cols = tl.arange(0, BLOCK)
    best_score = tl.full((), float("-inf"), tl.float32)
    best_index = tl.full((), 0, tl.int32)
    for start in range(0, V, BLOCK):
        offs = start + cols
        valid = offs < V
        x = tl.load(row_ptr + offs, mask=valid, other=float("-inf"))
        u = tl.rand(seed, row * V + offs)
        gumbel = -tl.log(-tl.log(u))
        score = tl.where(valid & (_ordered_key(x) >= cut_key), x + gumbel, float("-inf"))
        block_best = tl.max(score, axis=0)
        block_index = tl.argmax(score, axis=0, tie_break_left=True)
        take = block_best > best_score  # strictly: an earlier block keeps a tie
        best_index = tl.where(take, start + block_index, best_index)
        best_score = tl.where(take, block_best, best_score)
    tl.store(out_ptr + row, best_index.to(tl.int64))


def run(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    """Draw one token per row after top-k then top-p filtering; int64 ``[B]``, the same for the same seed."""
    B, V = logits.shape
    tokens = torch.empty((B,), dtype=torch.int64, device=logits.device)
    _topk_topp_sample_kernel[(B,)](
        logits, top_k, top_p, tokens, V, logits.stride(0), seed, BLOCK=BLOCK, RADIX_BITS=RADIX_BITS, num_warps=NUM_WARPS
    )
    return tokens
