"""Honest naive solution for rejection_sampler (a test helper): two kernels, one program per request each. The
first walks the drafts one by one and stores the number accepted; the second reads it, draws the recovered or
bonus token by Gumbel-max over log(residual), and writes the row."""

import torch
import triton
import triton.language as tl

BLOCK = 512


@triton.jit
def _accept_kernel(draft_ptr, target_ptr, ids_ptr, n_ptr, D, V, seed):
    b = tl.program_id(0)
    n = D
    for i in range(D):
        x = tl.load(ids_ptr + b * D + i)
        q = tl.load(draft_ptr + (b * D + i).to(tl.int64) * V + x)
        p = tl.load(target_ptr + (b * (D + 1) + i).to(tl.int64) * V + x)
        u = tl.rand(seed, b * (D + 1) + i)
        if (n == D) & (u * q >= p):
            n = i
    tl.store(n_ptr + b, n)


@triton.jit
def _final_kernel(draft_ptr, target_ptr, ids_ptr, n_ptr, out_ptr, B, D, V, seed, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    n = tl.load(n_ptr + b)
    best = tl.full((), float("-inf"), tl.float32)
    best_index = tl.full((), 0, tl.int32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        p = tl.load(target_ptr + (b * (D + 1) + n).to(tl.int64) * V + offs, mask=offs < V, other=0.0)
        q = tl.load(draft_ptr + (b * D + n).to(tl.int64) * V + offs, mask=offs < tl.where(n < D, V, 0), other=0.0)
        w = tl.maximum(p - q, 0.0)
        u = tl.rand(seed, B * (D + 1) + b * V + offs)
        score = tl.where(w > 0, tl.log(w) - tl.log(-tl.log(u)), float("-inf"))
        if tl.max(score, axis=0) > best:
            best_index = start + tl.argmax(score, axis=0, tie_break_left=True)
            best = tl.max(score, axis=0)
    for i in range(D + 1):
        if i < n:
            tl.store(out_ptr + b * (D + 1) + i, tl.load(ids_ptr + b * D + i))
        elif i == n:
            tl.store(out_ptr + b * (D + 1) + i, best_index.to(tl.int64))
        else:
            tl.store(out_ptr + b * (D + 1) + i, tl.full((), -1, tl.int64))


def run(draft_probs: torch.Tensor, target_probs: torch.Tensor, draft_ids: torch.Tensor, seed: int) -> torch.Tensor:
    B, D, V = draft_probs.shape
    accepted = torch.empty((B,), dtype=torch.int32, device=draft_probs.device)
    tokens = torch.empty((B, D + 1), dtype=torch.int64, device=draft_probs.device)
    _accept_kernel[(B,)](draft_probs, target_probs, draft_ids, accepted, D, V, seed)
    _final_kernel[(B,)](draft_probs, target_probs, draft_ids, accepted, tokens, B, D, V, seed, BLOCK=BLOCK)
    return tokens
