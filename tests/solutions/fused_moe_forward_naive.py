"""Honest, straightforward Triton solution for ``fused_moe_forward``: one program per routing slot, no grouping.

A routing program per token picks its top-K experts from the fp32 logits (repeated arg-max) and their
weights (a softmax over the K chosen logits). Then every slot ``(t, j)`` is its own program: the gate and up
projections of ``hidden[t]`` with expert ``e = ids[t, j]``'s weights (CUDA-core products summed over column
chunks), the SwiGLU into an fp32 row, the down projection times the routing weight into the slot's fp32
output row; a last program per token sums its ``K`` rows. Every slot re-reads its expert's weights (no tiles
shared between the tokens of an expert, no tensor cores). PyTorch is used only for allocation.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

COLS = 64  # one chunk per row at the smoke shapes (the interpreter pays per operation)


@triton.jit
def _route_kernel(logits_ptr, ids_ptr, weights_ptr, E, K: tl.constexpr, E_PAD: tl.constexpr):
    t = tl.program_id(0)
    experts = tl.arange(0, E_PAD)
    z = tl.load(logits_ptr + t * E + experts, mask=experts < E, other=-float("inf"))
    top = tl.max(z, axis=0)
    total = 0.0
    for j in tl.static_range(K):
        best = tl.max(z, axis=0)
        e = tl.min(tl.where(z == best, experts, E_PAD), axis=0)
        z = tl.where(experts == e, -float("inf"), z)
        tl.store(ids_ptr + t * K + j, e)
        tl.store(weights_ptr + t * K + j, tl.exp(best - top))
        total += tl.exp(best - top)
    for j in tl.static_range(K):
        tl.store(weights_ptr + t * K + j, tl.load(weights_ptr + t * K + j) / total)


@triton.jit
def _act_kernel(hidden_ptr, w13_ptr, ids_ptr, act_ptr, H, inter, K: tl.constexpr, COLS: tl.constexpr):
    s = tl.program_id(0)
    t = s // K
    e = tl.load(ids_ptr + s)
    for i0 in range(0, inter, COLS):
        rows = i0 + tl.arange(0, COLS)
        g = tl.zeros([COLS], dtype=tl.float32)
        u = tl.zeros([COLS], dtype=tl.float32)
        for h0 in range(0, H, COLS):
            cols = h0 + tl.arange(0, COLS)
            x = tl.load(hidden_ptr + t * H + cols, mask=cols < H, other=0.0).to(tl.float32)
            ok = (rows < inter)[:, None] & (cols < H)[None, :]
            wg = tl.load(w13_ptr + (e * 2 * inter + rows[:, None]) * H + cols[None, :], mask=ok, other=0.0)
            wu = tl.load(w13_ptr + (e * 2 * inter + inter + rows[:, None]) * H + cols[None, :], mask=ok, other=0.0)
            g += tl.sum(wg.to(tl.float32) * x[None, :], axis=1)
            u += tl.sum(wu.to(tl.float32) * x[None, :], axis=1)
        tl.store(act_ptr + s * inter + rows, g / (1.0 + tl.exp(-g)) * u, mask=rows < inter)


@triton.jit
def _down_kernel(act_ptr, w2_ptr, ids_ptr, weights_ptr, slot_out_ptr, H, inter, COLS: tl.constexpr):
    s = tl.program_id(0)
    e = tl.load(ids_ptr + s)
    w = tl.load(weights_ptr + s)
    for h0 in range(0, H, COLS):
        rows = h0 + tl.arange(0, COLS)
        y = tl.zeros([COLS], dtype=tl.float32)
        for i0 in range(0, inter, COLS):
            cols = i0 + tl.arange(0, COLS)
            a = tl.load(act_ptr + s * inter + cols, mask=cols < inter, other=0.0)
            ok = (rows < H)[:, None] & (cols < inter)[None, :]
            w2 = tl.load(w2_ptr + (e * H + rows[:, None]) * inter + cols[None, :], mask=ok, other=0.0)
            y += tl.sum(w2.to(tl.float32) * a[None, :], axis=1)
        tl.store(slot_out_ptr + s * H + rows, w * y, mask=rows < H)


@triton.jit
def _sum_kernel(slot_out_ptr, out_ptr, H, K: tl.constexpr, COLS: tl.constexpr):
    t = tl.program_id(0)
    for h0 in range(0, H, COLS):
        cols = h0 + tl.arange(0, COLS)
        acc = tl.zeros([COLS], dtype=tl.float32)
        for j in tl.static_range(K):
            acc += tl.load(slot_out_ptr + (t * K + j) * H + cols, mask=cols < H, other=0.0)
        tl.store(out_ptr + t * H + cols, acc.to(tl.bfloat16), mask=cols < H)


def route(router_logits, top_k):  # type: ignore[no-untyped-def]
    """(ids int32 [T, K], weights float32 [T, K]): the top-K experts and their renormalised probabilities."""
    T, E = router_logits.shape
    ids = torch.empty((T, top_k), dtype=torch.int32, device=router_logits.device)
    weights = torch.empty((T, top_k), dtype=torch.float32, device=router_logits.device)
    _route_kernel[(T,)](router_logits, ids, weights, E, K=top_k, E_PAD=triton.next_power_of_2(E))
    return ids, weights


def experts(hidden, w13, w2, ids, weights):  # type: ignore[no-untyped-def]
    """sum_j weights[t, j] * expert_{ids[t, j]}(hidden[t]) for every token, bfloat16 [T, H]."""
    T, H = hidden.shape
    K = ids.shape[1]
    inter = w2.shape[2]
    act = torch.empty((T * K, inter), dtype=torch.float32, device=hidden.device)
    slot_out = torch.empty((T * K, H), dtype=torch.float32, device=hidden.device)
    out = torch.empty_like(hidden)
    _act_kernel[(T * K,)](hidden, w13, ids, act, H, inter, K=K, COLS=COLS)
    _down_kernel[(T * K,)](act, w2, ids, weights, slot_out, H, inter, COLS=COLS)
    _sum_kernel[(T,)](slot_out, out, H, K=K, COLS=COLS)
    return out


def run(hidden, router_logits, w13, w2, top_k):  # type: ignore[no-untyped-def]
    ids, weights = route(router_logits, top_k)
    return experts(hidden, w13, w2, ids, weights)
