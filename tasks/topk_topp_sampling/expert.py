"""Expert solution for ``topk_topp_sampling``: a radix select for top-k, a pivoted draw for top-p, no sort.

The reference sorts every row of the vocabulary (151,936 floats) to find two cuts: the k-th largest logit
(top-k) and the smallest logit whose larger neighbours hold less than p of the top-k mass (top-p). Neither cut
needs the order of the whole row.

Top-k is one value, the k-th largest logit: a radix select finds it exactly over an order-preserving 32-bit key
of the logit, 8 bits per pass. A pass histograms (``tl.histogram``, 256 bins) the next byte of the keys that
share the bytes already decided, and the byte at which the count from the top reaches k is kept. Four passes,
each a few integer operations per logit.

Top-p is never searched for. The token is drawn from the top-k law by the Gumbel-max trick (argmax of
logit + G over the kept tokens, G = -log(-log U), U from Philox keyed by the call's seed), and then tested: it is
in the nucleus exactly when the top-k mass of the logits strictly larger than it is below p * Z. If it is not,
neither is any token at or below it, so the next draw is made among the logits strictly above it (the pivot
rises) with fresh random numbers, until a draw passes. Conditioned on passing, the draw follows the top-k law
restricted to the nucleus and renormalised: the law the task defines, with no threshold computed. The test of a
draw and the next draw share one pass (the mass above the pivot and the new argmax over the same logits), and
the first draw's pass also sums Z. Each draw lands in the nucleus with probability at least p, so a row takes
one or two draw passes on average.

Equal logits are kept or dropped together at both cuts (every comparison is on keys), and the draw's argmax
takes the lowest index among equal scores, so the same seed gives the same token.

One program handles one row: 4 radix passes (1 max pass when k = V) and 2-3 draw passes over its logits, no
intermediate tensor in global memory.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

DIGIT_BITS = 8  # key bits decided per radix pass: a 256-bin histogram
# (logits per step of a pass, warps): few rows leave SMs idle, so each program takes wide steps and many warps
# to keep more loads in flight; with several programs per SM, narrower ones. Measured on an H100 (do_bench,
# docs/performance.md): B = 64 0.59 ms at (8192, 16) against 0.71 at (4096, 16); B = 1024 3.71 ms at (4096, 8)
# against 5.04 at (4096, 16).
FEW_ROWS = (8192, 16)
MANY_ROWS = (4096, 8)
FEW_ROWS_AT_MOST = 128
TINY = tl.constexpr(1e-30)  # floor on a uniform before its logs: -log(-log(0)) would be -inf, a lost draw


@triton.jit
def _key(x):
    """A uint32 key whose unsigned order is the order of the float32 values (-0.0 folded into +0.0): negative
    values have every bit flipped, the others only the sign bit."""
    bits = (x + 0.0).to(tl.uint32, bitcast=True)
    return tl.where((bits >> 31) == 1, ~bits, bits | 0x80000000)


@triton.jit
def _row_max(row_ptr, V, BLOCK: tl.constexpr):
    """The largest logit of the row (when k = V there is no radix pass to find it in)."""
    cols = tl.arange(0, BLOCK)
    largest = tl.full((BLOCK,), float("-inf"), tl.float32)
    for start in range(0, V, BLOCK):
        offs = start + cols
        largest = tl.maximum(largest, tl.load(row_ptr + offs, mask=offs < V, other=float("-inf")))
    return tl.max(largest, axis=0)


@triton.jit
def _topk_cut(row_ptr, V, k, BLOCK: tl.constexpr, DIGIT_BITS: tl.constexpr):
    """The key of the k-th largest logit of the row (a radix select, most significant byte first), and the row's
    largest logit, found in the first pass."""
    BINS: tl.constexpr = 1 << DIGIT_BITS
    cols = tl.arange(0, BLOCK)
    bins = tl.arange(0, BINS)
    prefix = tl.full((), 0, tl.uint32)  # the bytes decided so far
    higher = tl.full((), 0, tl.int32)  # logits whose key is above every key with this prefix
    largest = tl.full((BLOCK,), float("-inf"), tl.float32)
    for level in tl.static_range(32 // DIGIT_BITS):
        shift = 32 - DIGIT_BITS * (level + 1)
        hist = tl.zeros((BINS,), tl.int32)
        for start in range(0, V, BLOCK):
            offs = start + cols
            valid = offs < V
            x = tl.load(row_ptr + offs, mask=valid, other=float("-inf"))
            key = _key(x)
            digit = ((key >> shift) & (BINS - 1)).to(tl.int32)
            if level == 0:
                largest = tl.maximum(largest, x)
                hist += tl.histogram(digit, BINS, mask=valid)
            else:
                same_prefix = (key >> (shift + DIGIT_BITS)) == (prefix >> (shift + DIGIT_BITS))
                hist += tl.histogram(digit, BINS, mask=valid & same_prefix)
        # at_or_above[d]: logits with this prefix and byte >= d, plus every logit above the prefix. It falls as d
        # grows and at_or_above[0] >= k (by induction), so the largest byte that still reaches k is the k-th's.
        at_or_above = higher + tl.sum(hist, axis=0) - tl.cumsum(hist, axis=0) + hist
        byte = tl.max(tl.where(at_or_above >= k, bins, 0), axis=0)
        higher += tl.sum(tl.where(bins > byte, hist, 0), axis=0)
        prefix = prefix | (byte.to(tl.uint32) << shift)
    return prefix, tl.max(largest, axis=0)


@triton.jit
def _kept_draw(row_ptr, V, lo, row_max, philox_key, draw, BLOCK: tl.constexpr):
    """Over the logits whose key is >= `lo`: their mass (sum of exp(x - row_max)) and a Gumbel-max draw among
    them (the lowest index among equal scores). `draw` numbers the row's draws: each uses its own counters."""
    QUARTER: tl.constexpr = BLOCK // 4
    cols = tl.arange(0, QUARTER)
    counters_per_draw = tl.cdiv(V, BLOCK) * QUARTER
    mass = tl.zeros((QUARTER,), tl.float32)
    best = tl.full((QUARTER,), float("-inf"), tl.float32)  # per lane: its best score and where
    at = tl.zeros((QUARTER,), tl.int32)
    for start in range(0, V, BLOCK):
        counter = (draw.to(tl.int64) * counters_per_draw + start // 4 + cols).to(tl.uint32)
        u0, u1, u2, u3 = tl.rand4x(philox_key, counter)  # one Philox call, four uniforms, one per quarter
        for quarter in tl.static_range(4):
            if quarter == 0:
                u = u0
            elif quarter == 1:
                u = u1
            elif quarter == 2:
                u = u2
            else:
                u = u3
            offs = start + quarter * QUARTER + cols
            valid = offs < V
            x = tl.load(row_ptr + offs, mask=valid, other=float("-inf"))
            kept = valid & (_key(x) >= lo)
            mass += tl.where(kept, tl.exp(x - row_max), 0.0)
            score = tl.where(kept, x - tl.log(-tl.log(tl.maximum(u, TINY))), float("-inf"))
            better = score > best  # strictly: a lane keeps its earlier (lower) index on a tie
            best = tl.where(better, score, best)
            at = tl.where(better, offs, at)
    top = tl.max(best, axis=0)
    token = tl.min(tl.where(best == top, at, V), axis=0)  # the lowest index holding the best score
    return tl.sum(mass, axis=0), token


@triton.jit
def _topk_topp_sample_kernel(
    logits_ptr, top_k_ptr, top_p_ptr, out_ptr, V, stride_row, seed, BLOCK: tl.constexpr, DIGIT_BITS: tl.constexpr
):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * stride_row
    k = tl.load(top_k_ptr + row)
    p = tl.load(top_p_ptr + row)
    # Philox key: the call's seed in the low word, the row in the high word (rows draw independent streams)
    philox_key = seed.to(tl.int64) + (row.to(tl.int64) << 32)
    if k < V:
        kth, row_max = _topk_cut(row_ptr, V, k, BLOCK, DIGIT_BITS)
    else:
        kth = tl.full((), 0, tl.uint32)  # every key is >= 0: top-k keeps every token
        row_max = _row_max(row_ptr, V, BLOCK)
    # the first draw from the top-k law; its pass also sums the top-k mass Z
    total, token = _kept_draw(row_ptr, V, kth, row_max, philox_key, tl.full((), 0, tl.int32), BLOCK)
    accepted = (p >= 1.0).to(tl.int32)  # p = 1: the whole top-k set is the nucleus
    draw = tl.full((), 1, tl.int32)
    while accepted == 0:
        # the logits strictly above the drawn one: their mass decides the draw, and the next draw is among them
        pivot = _key(tl.load(row_ptr + token)) + 1
        above, next_token = _kept_draw(row_ptr, V, pivot, row_max, philox_key, draw, BLOCK)
        accepted = (above < p * total).to(tl.int32)
        token = tl.where(accepted == 1, token, next_token)
        draw += 1
    tl.store(out_ptr + row, token.to(tl.int64))


def run(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    """Draw one token per row after top-k then top-p filtering; int64 ``[B]``, the same for the same seed."""
    B, V = logits.shape
    block, warps = FEW_ROWS if B <= FEW_ROWS_AT_MOST else MANY_ROWS
    block = min(block, max(1024, triton.next_power_of_2(V)))  # a short row: no step wider than it needs
    tokens = torch.empty((B,), dtype=torch.int64, device=logits.device)
    _topk_topp_sample_kernel[(B,)](
        logits, top_k, top_p, tokens, V, logits.stride(0), seed, BLOCK=block, DIGIT_BITS=DIGIT_BITS, num_warps=warps
    )
    return tokens
