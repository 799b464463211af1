"""Honest, straightforward Triton solution for ``mla_decode``.

Absorbed, but one program per (sequence, head) and no tensor cores:

* ``_absorb_kernel``: ``q_lat[b, h] = q_nope[b, h] @ w_uk[h]`` as a vector-matrix product (tl.sum);
* ``_attend_kernel``: one program per (sequence, head) walks the sequence's tokens in tiles with an
  online softmax and writes the latent output ``o_lat[b, h]`` in float32;
* ``_up_kernel``: ``o[b, h] = o_lat[b, h] @ w_uv[h]``.

Every head rereads the whole latent cache (H times the bytes of the expert) and the products run on
the CUDA cores. PyTorch is used only for ``torch.empty``.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _absorb_kernel(qn_ptr, w_ptr, qlat_ptr, H, stride_wn, stride_wc, DN: tl.constexpr, DC: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)  # = b * H + h
    h = pid % H
    n = tl.arange(0, DN)
    c = tl.arange(0, DC)
    q = tl.load(qn_ptr + pid * DN + n).to(tl.float32)
    w = tl.load(w_ptr + h * DN * DC + n[:, None] * stride_wn + c[None, :] * stride_wc).to(tl.float32)
    tl.store(qlat_ptr + pid * DC + c, tl.sum(q[:, None] * w, axis=0))


@triton.jit
def _attend_kernel(
    qlat_ptr,
    qpe_ptr,
    kvc_ptr,
    kpe_ptr,
    olat_ptr,
    H,
    L,
    start,
    scale,
    DC: tl.constexpr,
    DR: tl.constexpr,
    BLOCK_N: tl.constexpr,
    USE_ROPE: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    b = pid // H
    c = tl.arange(0, DC)
    r = tl.arange(0, DR)
    q = tl.load(qlat_ptr + pid * DC + c)
    qp = tl.load(qpe_ptr + pid * DR + r).to(tl.float32)
    m = tl.max(tl.full([BLOCK_N], float("-inf"), tl.float32), axis=0)
    den = tl.sum(tl.zeros([BLOCK_N], tl.float32), axis=0)
    acc = tl.zeros([DC], tl.float32)
    for n0 in range(start, L, BLOCK_N):
        tok = n0 + tl.arange(0, BLOCK_N)
        tm = tok < L
        kv = tl.load(kvc_ptr + (b * L + tok[:, None]) * DC + c[None, :], mask=tm[:, None], other=0.0).to(tl.float32)
        s = tl.sum(kv * q[None, :], axis=1)
        if USE_ROPE:
            kp = tl.load(kpe_ptr + (b * L + tok[:, None]) * DR + r[None, :], mask=tm[:, None], other=0.0).to(tl.float32)
            s += tl.sum(kp * qp[None, :], axis=1)
        s = tl.where(tm, s * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        den = den * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * kv, axis=0)
        m = m_new
    tl.store(olat_ptr + pid * DC + c, acc / den)


@triton.jit
def _up_kernel(olat_ptr, w_ptr, o_ptr, H, DC: tl.constexpr, DV: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    h = pid % H
    c = tl.arange(0, DC)
    v = tl.arange(0, DV)
    lat = tl.load(olat_ptr + pid * DC + c)
    w = tl.load(w_ptr + (h * DC + c[:, None]) * DV + v[None, :]).to(tl.float32)
    tl.store(o_ptr + pid * DV + v, tl.sum(lat[:, None] * w, axis=0).to(tl.bfloat16))


def absorb(q_nope, w_uk, stride_wn, stride_wc):
    """``q_lat`` float32 ``[B, H, DC]``; ``w_uk[h]`` read with the given (n, c) strides (honest: DC, 1)."""
    B, H, DN = q_nope.shape
    DC = w_uk.numel() // (H * DN)
    q_lat = torch.empty((B, H, DC), dtype=torch.float32, device=q_nope.device)
    _absorb_kernel[(B * H,)](q_nope, w_uk, q_lat, H, stride_wn, stride_wc, DN=DN, DC=DC)
    return q_lat


def attend(q_lat, q_pe, kv_c, k_pe, scale, start=0, use_rope=True):
    """Latent output float32 ``[B, H, DC]`` over tokens ``[start, L)`` (honest: all of them, with rope)."""
    B, H, DC = q_lat.shape
    L, DR = kv_c.shape[1], k_pe.shape[2]
    o_lat = torch.empty((B, H, DC), dtype=torch.float32, device=q_lat.device)
    _attend_kernel[(B * H,)](q_lat, q_pe, kv_c, k_pe, o_lat, H, L, start, scale, DC=DC, DR=DR, BLOCK_N=32, USE_ROPE=use_rope)
    return o_lat


def up(o_lat, w_uv):
    B, H, DC = o_lat.shape
    DV = w_uv.shape[2]
    o = torch.empty((B, H, DV), dtype=torch.bfloat16, device=o_lat.device)
    _up_kernel[(B * H,)](o_lat, w_uv, o, H, DC=DC, DV=DV)
    return o


def run(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv):
    DC = kv_c.shape[2]
    scale = 1.0 / math.sqrt(q_nope.shape[2] + q_pe.shape[2])
    return up(attend(absorb(q_nope, w_uk, DC, 1), q_pe, kv_c, k_pe, scale), w_uv)
