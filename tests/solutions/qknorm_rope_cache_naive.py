"""Honest, straightforward Triton solution for ``qknorm_rope_cache``.

Three kernels, each a program per (token, head) or per token, with temporaries between them:

* ``_rmsnorm_kernel``: RMSNorm of every q and k head into an fp32 ``[T, Hq + Hkv, D]`` buffer;
* ``_rope_kernel``: the NeoX rotation of each normalised head by the token's position, q heads into
  ``q_out`` and k heads into a bfloat16 ``[T, Hkv, D]`` buffer;
* ``_cache_write_kernel``: one program per token copies its k (from the buffer) and v (from qkv) into
  the slot ``slot_mapping[t]`` of the caches.

So the normalised values make a round trip through memory (fp32) and k another (bf16).
PyTorch is used only for ``torch.empty``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

EPS = 1e-6


@triton.jit
def _rmsnorm_kernel(qkv_ptr, qw_ptr, kw_ptr, normed_ptr, Hq, Hkv, D, eps, BLOCK_D: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)  # q heads first, then k heads
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x = tl.load(qkv_ptr + t * (Hq + 2 * Hkv) * D + h * D + cols, mask=mask, other=0.0).to(tl.float32)
    qw = tl.load(qw_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    kw = tl.load(kw_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.where(h < Hq, qw, kw)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / D + eps)
    tl.store(normed_ptr + (t * (Hq + Hkv) + h) * D + cols, x * rstd * w, mask=mask)


@triton.jit
def _rotate_head(src_ptr, dst_ptr, cs_ptr, D, R, BLOCK_HALF: tl.constexpr, BLOCK_D: tl.constexpr):
    """Rotate one fp32 head at ``src_ptr`` by the cos/sin row at ``cs_ptr``; store bf16 at ``dst_ptr``."""
    half = R // 2
    i = tl.arange(0, BLOCK_HALF)
    imask = i < half
    x1 = tl.load(src_ptr + i, mask=imask, other=0.0)
    x2 = tl.load(src_ptr + half + i, mask=imask, other=0.0)
    cos = tl.load(cs_ptr + i, mask=imask, other=0.0)
    sin = tl.load(cs_ptr + half + i, mask=imask, other=0.0)
    tl.store(dst_ptr + i, (x1 * cos - x2 * sin).to(tl.bfloat16), mask=imask)
    tl.store(dst_ptr + half + i, (x2 * cos + x1 * sin).to(tl.bfloat16), mask=imask)
    cols = tl.arange(0, BLOCK_D)
    rest = (cols >= R) & (cols < D)
    tl.store(dst_ptr + cols, tl.load(src_ptr + cols, mask=rest, other=0.0).to(tl.bfloat16), mask=rest)


@triton.jit
def _rope_kernel(
    normed_ptr, pos_ptr, cos_sin_ptr, q_out_ptr, k_tmp_ptr, Hq, Hkv, D, R, BLOCK_HALF: tl.constexpr, BLOCK_D: tl.constexpr
):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    pos = tl.load(pos_ptr + t)
    src = normed_ptr + (t * (Hq + Hkv) + h) * D
    if h < Hq:
        dst = q_out_ptr + (t * Hq + h) * D
    else:
        dst = k_tmp_ptr + (t * Hkv + h - Hq) * D
    _rotate_head(src, dst, cos_sin_ptr + pos * R, D, R, BLOCK_HALF, BLOCK_D)


@triton.jit
def _cache_write_kernel(k_tmp_ptr, qkv_ptr, slot_ptr, k_cache_ptr, v_cache_ptr, Hq, Hkv, D, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_ptr + t)
    offs = tl.arange(0, BLOCK)
    mask = offs < Hkv * D
    k = tl.load(k_tmp_ptr + t * Hkv * D + offs, mask=mask)
    v = tl.load(qkv_ptr + t * (Hq + 2 * Hkv) * D + (Hq + Hkv) * D + offs, mask=mask)
    tl.store(k_cache_ptr + slot * Hkv * D + offs, k, mask=mask)
    tl.store(v_cache_ptr + slot * Hkv * D + offs, v, mask=mask)


def dims(qkv, cos_sin_cache, k_cache):
    """``(T, Hq, Hkv, D, R)`` from the input shapes."""
    _, _, Hkv, D = k_cache.shape
    return qkv.shape[0], qkv.shape[1] // D - 2 * Hkv, Hkv, D, cos_sin_cache.shape[1]


def normalize(qkv, q_norm_weight, k_norm_weight, Hq, Hkv, D):
    T = qkv.shape[0]
    normed = torch.empty((T, Hq + Hkv, D), dtype=torch.float32, device=qkv.device)
    _rmsnorm_kernel[(T, Hq + Hkv)](qkv, q_norm_weight, k_norm_weight, normed, Hq, Hkv, D, EPS, BLOCK_D=triton.next_power_of_2(D))
    return normed


def rotate(normed, positions, cos_sin_cache, Hq, Hkv, D, R):
    T = normed.shape[0]
    q_out = torch.empty((T, Hq, D), dtype=torch.bfloat16, device=normed.device)
    k_tmp = torch.empty((T, Hkv, D), dtype=torch.bfloat16, device=normed.device)
    block_half, block_d = triton.next_power_of_2(R // 2), triton.next_power_of_2(D)
    _rope_kernel[(T, Hq + Hkv)](
        normed, positions, cos_sin_cache, q_out, k_tmp, Hq, Hkv, D, R, BLOCK_HALF=block_half, BLOCK_D=block_d
    )
    return q_out, k_tmp


def write_cache(k_tmp, qkv, slot_mapping, k_cache, v_cache, Hq, Hkv, D):
    T = qkv.shape[0]
    block = triton.next_power_of_2(Hkv * D)
    _cache_write_kernel[(T,)](k_tmp, qkv, slot_mapping, k_cache, v_cache, Hq, Hkv, D, BLOCK=block)


def run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache):
    _, Hq, Hkv, D, R = dims(qkv, cos_sin_cache, k_cache)
    normed = normalize(qkv, q_norm_weight, k_norm_weight, Hq, Hkv, D)
    q_out, k_tmp = rotate(normed, positions, cos_sin_cache, Hq, Hkv, D, R)
    write_cache(k_tmp, qkv, slot_mapping, k_cache, v_cache, Hq, Hkv, D)
    return q_out
