"""Honest, straightforward Triton solution for ``mamba2_ssd``: the recurrence step by step.

One elementwise kernel computes every step's decay ``exp(dt A)``; then one program per batch row walks the
sequence one step at a time with every head's state (``[H, P, N]``) in fp32 registers:
``S = decay * S + dt * x^T B`` (an outer product), ``y = S C + D x`` (a row sum). No chunks, no tensor cores:
``T`` serial steps per program. The scan takes explicit strides along the batch and the steps. PyTorch is used
only for allocation.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

ELEMS = 256


@triton.jit
def _decay_kernel(dt_ptr, A_ptr, decay_ptr, total, H, ELEMS: tl.constexpr):
    i = tl.program_id(0) * ELEMS + tl.arange(0, ELEMS)
    ok = i < total
    dt = tl.load(dt_ptr + i, mask=ok, other=0.0)
    tl.store(decay_ptr + i, tl.exp(dt * tl.load(A_ptr + i % H, mask=ok, other=0.0)), mask=ok)


@triton.jit
def _scan_kernel(
    x_ptr, dt_ptr, decay_ptr, B_ptr, C_ptr, D_ptr, y_ptr, state_ptr,
    steps, H, P, G, N, sx_b, sx_t, sdt_b, sdt_t, sbc_b, sbc_t,
    H_PAD: tl.constexpr, P_PAD: tl.constexpr, N_PAD: tl.constexpr,
):  # fmt: skip
    """One batch row, every head: x, y [.., steps, H, P], dt and decay [.., steps, H], B and C
    [.., steps, G, N], strided along (b, t); the states [H, P, N] in registers."""
    b = tl.program_id(0)
    h = tl.arange(0, H_PAD)[:, None, None]
    p = tl.arange(0, P_PAD)[None, :, None]
    n = tl.arange(0, N_PAD)[None, None, :]
    g = h // (H // G)  # each head's group
    skip = tl.load(D_ptr + h, mask=h < H, other=0.0)
    x_ok = (h < H) & (p < P)
    bc_ok = (h < H) & (n < N)
    state = tl.zeros([H_PAD, P_PAD, N_PAD], dtype=tl.float32)
    for t in range(steps):
        xs = tl.load(x_ptr + b * sx_b + t * sx_t + h * P + p, mask=x_ok, other=0.0).to(tl.float32)  # [H, P, 1]
        bs = tl.load(B_ptr + b * sbc_b + t * sbc_t + g * N + n, mask=bc_ok, other=0.0).to(tl.float32)  # [H, 1, N]
        cs = tl.load(C_ptr + b * sbc_b + t * sbc_t + g * N + n, mask=bc_ok, other=0.0).to(tl.float32)
        dt = tl.load(dt_ptr + b * sdt_b + t * sdt_t + h, mask=h < H, other=0.0)  # [H, 1, 1]
        decay = tl.load(decay_ptr + b * sdt_b + t * sdt_t + h, mask=h < H, other=0.0)
        state = decay * state + (dt * xs) * bs
        y = tl.sum(state * cs, axis=2, keep_dims=True) + skip * xs
        tl.store(y_ptr + b * sx_b + t * sx_t + h * P + p, y.to(tl.bfloat16), mask=x_ok)
    tl.store(state_ptr + ((b * H + h) * P + p) * N + n, state, mask=x_ok & (n < N))


def decays(dt, A):  # type: ignore[no-untyped-def]
    """exp(dt A) for every step and head, fp32 like dt."""
    decay = torch.empty_like(dt)
    _decay_kernel[(triton.cdiv(dt.numel(), ELEMS),)](dt, A, decay, dt.numel(), A.shape[0], ELEMS=ELEMS)
    return decay


def scan(x, dt, decay, Bm, Cm, D, y, state):  # type: ignore[no-untyped-def]
    """The recurrence over x's steps (views of the inputs allowed: strides are passed), into y and state."""
    batch, steps, H, P = x.shape
    G, N = Bm.shape[2], Bm.shape[3]
    _scan_kernel[(batch,)](
        x, dt, decay, Bm, Cm, D, y, state, steps, H, P, G, N,
        x.stride(0), x.stride(1), dt.stride(0), dt.stride(1), Bm.stride(0), Bm.stride(1),
        H_PAD=triton.next_power_of_2(H), P_PAD=triton.next_power_of_2(P), N_PAD=triton.next_power_of_2(N),
    )  # fmt: skip


def run(x, dt, A, Bm, Cm, D):  # type: ignore[no-untyped-def]
    batch, _, H, P = x.shape
    y = torch.empty_like(x)
    state = torch.empty((batch, H, P, Bm.shape[3]), dtype=torch.float32, device=x.device)
    scan(x, dt, decays(dt, A), Bm, Cm, D, y, state)
    return y, state
