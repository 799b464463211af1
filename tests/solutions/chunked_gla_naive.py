"""Honest, straightforward Triton solution for ``chunked_gla``: the recurrence step by step.

One program per ``(b, h)`` keeps the whole ``[D, D]`` state in float32 registers and walks the sequence one
step at a time: ``S = exp(g_t) S + k_t^T v_t``, ``o_t = D^-0.5 q_t S`` (elementwise products and a
reduction, no tensor cores, no chunks), then stores the final state. Everything is float32 but the
bfloat16 store of ``o``. PyTorch is used only for ``torch.empty``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _naive_gla_kernel(q_ptr, k_ptr, v_ptr, g_ptr, o_ptr, state_ptr, T, scale, D: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    base = bh * T * D
    d = tl.arange(0, D)
    state = tl.zeros([D, D], dtype=tl.float32)
    for t in range(T):
        q = tl.load(q_ptr + base + t * D + d).to(tl.float32)
        k = tl.load(k_ptr + base + t * D + d).to(tl.float32)
        v = tl.load(v_ptr + base + t * D + d).to(tl.float32)
        state = state * tl.exp(tl.load(g_ptr + bh * T + t)) + k[:, None] * v[None, :]
        o = tl.sum(q[:, None] * state, axis=0) * scale
        tl.store(o_ptr + base + t * D + d, o.to(tl.bfloat16))
    tl.store(state_ptr + bh * D * D + d[:, None] * D + d[None, :], state)


def gla(q, k, v, g, kernel, **constexprs):
    """``(o, final_state)`` from a kernel with ``_naive_gla_kernel``'s arguments (and ``constexprs``), one
    program per head."""
    B, H, T, D = q.shape
    o = torch.empty((B, H, T, D), dtype=torch.bfloat16, device=q.device)
    final_state = torch.empty((B, H, D, D), dtype=torch.float32, device=q.device)
    kernel[(B * H,)](q, k, v, g, o, final_state, T, D**-0.5, D=D, **constexprs)
    return o, final_state


def run(q, k, v, g):
    return gla(q, k, v, g, _naive_gla_kernel)
