"""Honest naive solution for topk_topp_sampling (a test helper): one program per row, each cut found by a plain
bisection over the 32 bits of an order-preserving key (one bit a pass: 32 passes per cut), the draw by the
exponential race with one Philox uniform per token."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _key(x):
    bits = (x + 0.0).to(tl.int32, bitcast=True)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)  # negative values: the 31 low bits flipped


@triton.jit
def _count_at_least(row_ptr, V, threshold, BLOCK: tl.constexpr):
    total = tl.full((), 0, tl.int32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + offs, mask=offs < V, other=float("-inf"))
        total += tl.sum(((_key(x) >= threshold) & (offs < V)).to(tl.int32), axis=0)
    return total


@triton.jit
def _mass_at_least(row_ptr, V, threshold, row_max, BLOCK: tl.constexpr):
    total = tl.full((), 0.0, tl.float32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + offs, mask=offs < V, other=float("-inf"))
        total += tl.sum(tl.where((_key(x) >= threshold) & (offs < V), tl.exp(x - row_max), 0.0), axis=0)
    return total


@triton.jit
def _row_max(row_ptr, V, BLOCK: tl.constexpr):
    best = tl.full((), float("-inf"), tl.float32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        best = tl.maximum(best, tl.max(tl.load(row_ptr + offs, mask=offs < V, other=float("-inf")), axis=0))
    return best


@triton.jit
def _top_k_cut(row_ptr, V, k, BLOCK: tl.constexpr):
    """The largest key t with count(key >= t) >= k, one bit at a time (unsigned, in int64)."""
    kth = tl.full((), 0, tl.int64)
    for bit in range(31, -1, -1):
        trial = kth + (tl.full((), 1, tl.int64) << bit)
        if _count_at_least(row_ptr, V, (trial - 2147483648).to(tl.int32), BLOCK) >= k:
            kth = trial
    return (kth - 2147483648).to(tl.int32)


@triton.jit
def _top_p_cut(row_ptr, V, p, kth_key, row_max, total, BLOCK: tl.constexpr):
    """The largest key t (at least kth_key) whose mass at or above it is still >= p * total."""
    cut = tl.full((), 0, tl.int64)
    for bit in range(31, -1, -1):
        trial = cut + (tl.full((), 1, tl.int64) << bit)
        threshold = tl.maximum((trial - 2147483648).to(tl.int32), kth_key)
        if _mass_at_least(row_ptr, V, threshold, row_max, BLOCK) >= p * total:
            cut = trial
    return tl.maximum((cut - 2147483648).to(tl.int32), kth_key)


@triton.jit
def _race(row_ptr, V, row, cut_key, row_max, seed, BLOCK: tl.constexpr):
    """The exponential race over the kept tokens: argmax of exp(x - max) / E, E ~ Exp(1) from Philox."""
    best_score = tl.full((), -1.0, tl.float32)
    best_index = tl.full((), 0, tl.int32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + offs, mask=offs < V, other=float("-inf"))
        weight = tl.where((offs < V) & (_key(x) >= cut_key), tl.exp(x - row_max), -1.0)
        score = weight / -tl.log(tl.rand(seed, row * V + offs))
        index = tl.argmax(score, axis=0, tie_break_left=True)
        if tl.max(score, axis=0) > best_score:
            best_index = start + index
            best_score = tl.max(score, axis=0)
    return best_index


@triton.jit
def _naive_sample_kernel(logits_ptr, top_k_ptr, top_p_ptr, out_ptr, V, stride_row, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * stride_row
    row_max = _row_max(row_ptr, V, BLOCK)
    kth_key = _top_k_cut(row_ptr, V, tl.load(top_k_ptr + row), BLOCK)
    total = _mass_at_least(row_ptr, V, kth_key, row_max, BLOCK)
    cut_key = _top_p_cut(row_ptr, V, tl.load(top_p_ptr + row), kth_key, row_max, total, BLOCK)
    tl.store(out_ptr + row, _race(row_ptr, V, row, cut_key, row_max, seed, BLOCK).to(tl.int64))


def run(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, seed: int) -> torch.Tensor:
    B, V = logits.shape
    tokens = torch.empty((B,), dtype=torch.int64, device=logits.device)
    _naive_sample_kernel[(B,)](logits, top_k, top_p, tokens, V, logits.stride(0), seed, BLOCK=BLOCK)
    return tokens
