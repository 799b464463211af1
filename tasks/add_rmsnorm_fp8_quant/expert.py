"""Expert Triton solution for ``add_rmsnorm_fp8_quant`` (the benchmark's gold standard).

Operator
--------
``run(x, residual, weight, eps)`` is the prologue of an FP8 block-wise linear
layer (DeepSeek-V3 in SGLang or vLLM).  Per row of the bfloat16 ``[M, N]``
inputs::

    s        = x + residual                     # float32
    residual <- bfloat16(s)                     # in place: the residual stream
    h        = s * rstd * weight,  rstd = 1 / sqrt(mean(s^2) + eps)
    per group of 128 columns:  scale = a power of two >= amax(|h|) / 448
                               y     = float8_e4m3fn(h / scale)

Returns ``y`` (float8_e4m3fn ``[M, N]``) and ``scales`` (float32
``[M, N / 128]``).  The eager reference runs about twenty kernels and moves
every intermediate (the float32 sum, its square, the normalised row, the
bfloat16 casts, the divided and clamped group values) through device memory:
about 85 bytes per element where 7 are needed (read x and residual, write
residual and y, 2 + 2 + 2 + 1).  The operator is purely bandwidth bound.

Design
------
L1, algorithm: *everything of a row in one place, one pass.*
    The residual add, the sum of squares, the normalisation, the group amax
    and the quantisation only ever combine values of the same row, so a
    program that holds a whole row (N <= 8192 here: 32 KB of float32) in
    registers can do all of it after one read of ``x`` and ``residual``.
    The only row-wide reduction is ``sum(s^2)``; the group amax is a
    reduction over 128 register values.  Nothing is written but the outputs.

L2, dataflow: *one kernel, a program per row.*
    ``_add_rmsnorm_quant_kernel`` loads ``x`` and ``residual`` (bf16) and
    ``weight``, adds in float32, stores the new residual (bf16), reduces the
    sum of squares, normalises, reshapes the row to ``[N / 128, 128]``, takes
    each group's amax with a register reduction, derives the scale, scales,
    casts to FP8 and stores ``y`` and the ``N / 128`` scales.  Bytes:
    ``7 M N`` (x, residual in; residual, y out) ``+ 4 M N / 128`` (scales)
    ``+ 2 N`` (weight, from L2 after the first rows).

L3, low-level: *vector width from the row, power-of-two scales.*
    ``BLOCK_N`` is ``N`` padded to a power of two and ``num_warps`` grows
    with it (``config_for``) so that each thread holds 8-16 contiguous bf16
    values of each input (16-32 byte vector loads) and the whole row stays
    in registers without spilling.  The scale is ``2^ceil(log2(amax / 448))``,
    computed from the float32 bits (``_pow2_scale``): dividing by it is an
    exact multiplication by ``2^-k`` (no division, no rounded reciprocal), the
    largest element of a group lands in (224, 448], and the scale is exactly
    representable as an 8-bit exponent (UE8M0, the scale format DeepGEMM
    uses).  The price is at most one bit of FP8 range, which the tolerance
    covers (measured on an H200: 0.027 against 0.023 for ``amax / 448``).

Interpreter note: Triton's CPU interpreter casts float32 to ``tl.float8e4nv``
incorrectly when rounding carries into the next power of two (the result can
be half the right value), so under ``TRITON_INTERPRET=1`` about 2% of the FP8
values are off.  The kernel is the same on both paths; the task's smoke
tolerance allows for the interpreter's cast, and the tests compare the kernel's
FP8 bits with a float32 emulation of the same algorithm under that cast.

PyTorch is used only for ``torch.empty`` allocation and shape glue; nothing
derived from an input is cached across calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

EPS = 1e-6  # the only accepted eps (DeepSeek-V3's rms_norm_eps)
GROUP = 128  # columns per quantisation group
FP8_MAX = 448.0  # largest finite float8_e4m3fn


# ----------------------------------------------------------------------------
# Launch configuration
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    block_n: int  # the whole row: next_power_of_2(N)
    num_warps: int  # grows with the row


def config_for(N: int) -> Config:
    """Fixed launch configuration for a row width (no run-time autotuning).

    A whole row per program; about 16 values of each input per thread (one 32-byte bf16 vector):
    4 warps at 2048 columns, 8 at 4096, 16 at 8192.
    """
    block_n = triton.next_power_of_2(N)
    return Config(block_n, min(16, max(1, block_n // 512)))


# ----------------------------------------------------------------------------
# Kernel
# ----------------------------------------------------------------------------
@triton.jit
def _pow2_scale(amax):
    """The smallest power of two >= amax / 448, and its inverse, from the float32 bits.

    ``amax / 448`` is a normal float32 (amax is clamped to >= 1e-10), so its biased exponent ``e``
    is in [1, 254]; rounding up to a power of two adds one to ``e`` when any mantissa bit is set.
    Both ``2^(e - 127)`` and ``2^(127 - e)`` are then built directly as bit patterns: exact.
    """
    bits = (amax / 448.0).to(tl.int32, bitcast=True)
    e = (bits >> 23) & 0xFF
    e = tl.where((bits & 0x7FFFFF) != 0, e + 1, e)
    scale = (e << 23).to(tl.float32, bitcast=True)
    inv_scale = ((254 - e) << 23).to(tl.float32, bitcast=True)
    return scale, inv_scale


@triton.jit
def _add_rmsnorm_quant_kernel(x_ptr, res_ptr, w_ptr, y_ptr, scale_ptr, N, eps, BLOCK_N: tl.constexpr, GROUP_SIZE: tl.constexpr):
    """Program ``row``: add, write the residual, normalise, quantise one whole row."""
    row = tl.program_id(0).to(tl.int64)  # int64 offsets: M * N may exceed 2^31
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    # One read of each input row, widened to float32 in registers.
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    s = x + r
    tl.store(res_ptr + row * N + cols, s.to(tl.bfloat16), mask=mask)  # the new residual stream
    # RMSNorm: the only row-wide reduction (masked lanes are 0 and add nothing; divide by N, not BLOCK_N).
    rstd = 1.0 / tl.sqrt(tl.sum(s * s, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    h = s * rstd * w
    # Per-group quantisation in registers: view the row as [BLOCK_N / 128, 128].
    NUM_G: tl.constexpr = BLOCK_N // GROUP_SIZE
    hg = tl.reshape(h, (NUM_G, GROUP_SIZE))
    amax = tl.maximum(tl.max(tl.abs(hg), axis=1), 1e-10)  # [NUM_G]; padded groups are all 0
    scale, inv_scale = _pow2_scale(amax)
    q = hg * inv_scale[:, None]  # exact: a power of two
    q = tl.minimum(tl.maximum(q, -448.0), 448.0)  # already in range; guards the rounding of amax / 448
    y = tl.reshape(q.to(tl.float8e4nv), (BLOCK_N,))
    tl.store(y_ptr + row * N + cols, y, mask=mask)
    gidx = tl.arange(0, NUM_G)
    n_groups = N // GROUP_SIZE
    tl.store(scale_ptr + row * n_groups + gidx, scale, mask=gidx < n_groups)


# ----------------------------------------------------------------------------
# Launcher
# ----------------------------------------------------------------------------
def add_rmsnorm_quant(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float, cfg: Config
) -> tuple[torch.Tensor, torch.Tensor]:
    """The one kernel with an explicit launch configuration; updates ``residual`` in place."""
    M, N = x.shape
    y = torch.empty((M, N), dtype=torch.float8_e4m3fn, device=x.device)
    scales = torch.empty((M, N // GROUP), dtype=torch.float32, device=x.device)
    _add_rmsnorm_quant_kernel[(M,)](
        x, residual, weight, y, scales, N, eps, BLOCK_N=cfg.block_n, GROUP_SIZE=GROUP, num_warps=cfg.num_warps
    )
    return y, scales


def run(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Residual add (in place), RMSNorm and 1 x 128 FP8 quantisation: ``(y fp8 [M, N], scales fp32 [M, N / 128])``."""
    if eps != EPS:
        raise ValueError(f"eps must be {EPS}, got {eps}")
    if x.ndim != 2 or residual.shape != x.shape or weight.shape != (x.shape[1],) or x.shape[1] % GROUP:
        raise ValueError("need x and residual [M, N] with N a multiple of 128, and weight [N]")
    if not (x.is_contiguous() and residual.is_contiguous() and weight.is_contiguous()):
        raise ValueError("x, residual and weight must be contiguous (residual is updated in place)")
    return add_rmsnorm_quant(x, residual, weight, eps, config_for(x.shape[1]))
