"""Honest, straightforward Triton solution for ``moe_permute``: the reference's dataflow in Triton.

Each slot finds its permuted position by counting, over all ``T K`` slots, those of a smaller expert and
those of its expert that come before it (quadratic in ``T K``); each expert's offset counts the slots of
smaller experts. Rows are copied one slot at a time, and the experts' weighted rows are added into a
zeroed fp32 buffer with atomics, then cast to bfloat16. PyTorch is used only for allocation.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CHUNK = 256  # slots compared at a time
COLS = 64  # columns per row program


@triton.jit
def _dest_kernel(ids_ptr, dest_ptr, n_slots, CHUNK: tl.constexpr):
    s = tl.program_id(0)
    mine = tl.load(ids_ptr + s)
    before = tl.zeros([CHUNK], dtype=tl.int32)
    for start in range(0, n_slots, CHUNK):
        others = start + tl.arange(0, CHUNK)
        ids = tl.load(ids_ptr + others, mask=others < n_slots, other=2147483647)
        before += ((ids < mine) | ((ids == mine) & (others < s))).to(tl.int32)
    tl.store(dest_ptr + s, tl.sum(before, axis=0))


@triton.jit
def _offsets_kernel(ids_ptr, offsets_ptr, n_slots, CHUNK: tl.constexpr):
    e = tl.program_id(0)
    smaller = tl.zeros([CHUNK], dtype=tl.int32)
    for start in range(0, n_slots, CHUNK):
        others = start + tl.arange(0, CHUNK)
        ids = tl.load(ids_ptr + others, mask=others < n_slots, other=2147483647)
        smaller += (ids < e).to(tl.int32)
    tl.store(offsets_ptr + e, tl.sum(smaller, axis=0))


@triton.jit
def _copy_kernel(hidden_ptr, dest_ptr, out_ptr, H, K, COLS: tl.constexpr):
    s = tl.program_id(0)
    d = tl.load(dest_ptr + s)
    for c in range(0, H, COLS):
        cols = c + tl.arange(0, COLS)
        row = tl.load(hidden_ptr + (s // K) * H + cols, mask=cols < H)
        tl.store(out_ptr + d * H + cols, row, mask=cols < H)


@triton.jit
def _accumulate_kernel(expert_ptr, dest_ptr, weights_ptr, acc_ptr, H, K, COLS: tl.constexpr):
    s = tl.program_id(0)
    d = tl.load(dest_ptr + s)
    w = tl.load(weights_ptr + s)
    for c in range(0, H, COLS):
        cols = c + tl.arange(0, COLS)
        rows = tl.load(expert_ptr + d * H + cols, mask=cols < H, other=0.0).to(tl.float32)
        tl.atomic_add(acc_ptr + (s // K) * H + cols, w * rows, mask=cols < H)


@triton.jit
def _cast_kernel(acc_ptr, out_ptr, n, COLS: tl.constexpr):
    offs = tl.program_id(0) * COLS + tl.arange(0, COLS)
    tl.store(out_ptr + offs, tl.load(acc_ptr + offs, mask=offs < n).to(tl.bfloat16), mask=offs < n)


def run(
    hidden: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, expert_out: torch.Tensor, num_experts: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    T, K = topk_ids.shape
    H = hidden.shape[1]
    n_slots = T * K
    dest = torch.empty((n_slots,), dtype=torch.int32, device=hidden.device)
    offsets = torch.empty((num_experts + 1,), dtype=torch.int32, device=hidden.device)
    permuted = torch.empty((n_slots, H), dtype=torch.bfloat16, device=hidden.device)
    acc = torch.zeros((T, H), dtype=torch.float32, device=hidden.device)
    combined = torch.empty((T, H), dtype=torch.bfloat16, device=hidden.device)
    _dest_kernel[(n_slots,)](topk_ids, dest, n_slots, CHUNK=CHUNK)
    _offsets_kernel[(num_experts + 1,)](topk_ids, offsets, n_slots, CHUNK=CHUNK)
    _copy_kernel[(n_slots,)](hidden, dest, permuted, H, K, COLS=COLS)
    _accumulate_kernel[(n_slots,)](expert_out, dest, topk_weights, acc, H, K, COLS=COLS)
    _cast_kernel[(triton.cdiv(T * H, COLS),)](acc, combined, T * H, COLS=COLS)
    return permuted, offsets, combined
