"""Honest, straightforward Triton solution for ``gated_deltanet``: the recurrence, token after token.

One program per batch, head and block of value columns keeps its ``[D, BV]`` slice of the float32 state in
registers and walks the sequence: per token it normalises q and k, decays the state, forms the delta rule's
correction ``beta (v - S^T k)`` and adds ``k`` times it, then writes ``o_t = D^-0.5 S^T q``. Every product is
an elementwise multiply and a reduction on CUDA cores, and the T steps are sequential: no chunks, no tensor
cores. PyTorch is used only for allocation.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_V = 16  # value columns per program (the state's columns evolve independently)


@triton.jit
def _recurrent_kernel(
    q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, o_ptr, final_ptr, T, scale, D: tl.constexpr, BV: tl.constexpr,
):  # fmt: skip
    bh = tl.program_id(0)
    cols = tl.arange(0, D)
    vcols = tl.program_id(1) * BV + tl.arange(0, BV)
    state = tl.zeros([D, BV], dtype=tl.float32)  # keys x values
    for t in range(T):
        row = (bh * T + t).to(tl.int64) * D
        q = tl.load(q_ptr + row + cols).to(tl.float32)
        k = tl.load(k_ptr + row + cols).to(tl.float32)
        q = q / tl.sqrt(tl.sum(q * q, axis=0) + 1e-6)
        k = k / tl.sqrt(tl.sum(k * k, axis=0) + 1e-6)
        v = tl.load(v_ptr + row + vcols).to(tl.float32)
        alpha = tl.exp(tl.load(g_ptr + bh * T + t))
        beta = tl.load(beta_ptr + bh * T + t).to(tl.float32)
        state = state * alpha
        correction = beta * (v - tl.sum(k[:, None] * state, axis=0))  # beta (v - S^T k)
        state = state + k[:, None] * correction[None, :]
        o = scale * tl.sum(q[:, None] * state, axis=0)
        tl.store(o_ptr + row + vcols, o.to(tl.bfloat16))
    tl.store(final_ptr + (bh * D + cols[:, None]).to(tl.int64) * D + vcols[None, :], state)


def run(q, k, v, g, beta):  # type: ignore[no-untyped-def]
    B, H, T, D = q.shape
    o = torch.empty_like(q)
    final = torch.empty((B, H, D, D), dtype=torch.float32, device=q.device)
    bv = min(BLOCK_V, D)
    _recurrent_kernel[(B * H, D // bv)](q, k, v, g, beta, o, final, T, D**-0.5, D=D, BV=bv)
    return o, final
