"""Expert Triton solution for ``w4a16_gemm`` (the benchmark's gold standard).

Operator
--------
``run(x, qweight, scales, qzeros)`` multiplies bfloat16 activations ``x [M, K]`` by an int4 weight
in GPTQ's packed layout (groups of 128 rows of K share a bfloat16 scale and a 4-bit zero point)::

    q[k, n] = (qweight[k // 8, n] >> 4 (k % 8)) & 15
    z[g, n] = (qzeros[g, n // 8] >> 4 (n % 8)) & 15
    y[m, n] = sum_k x[m, k] (q[k, n] - z[k // 128, n]) s[k // 128, n]      # bfloat16 [M, N]

The eager reference unpacks the codes into int32 and int8 ``[K, N]`` tensors, dequantises into a
bfloat16 ``[K, N]`` copy of the weight and multiplies: about 37 bytes of traffic per weight where
half a byte is needed. The product does 4 M FLOPs per byte of packed weight: 4 and 64 at M = 1 and 16,
far below the H200's ridge (about 206 FLOPs per byte in dense bf16), and 256 at M = 64, at the ridge
(its compute floor, 5.8 us, is just above its memory floor, 5.3 us).  So the whole cost is reading the
packed weight once, and at M = 64 also keeping the matrix cores busy.

Design
------
L1, algorithm: *factor the dequantisation out of the sum.*
    Within one group ``g`` the scale and zero are constants, so
    ``sum_k x_k (q_k - z) s = s (sum_k x_k q_k - z sum_k x_k)``: the inner loop only needs the raw
    codes, and the scale and zero are applied once per group and output (1/128 of the work) instead
    of once per weight.  The dequantised weight is never written anywhere, not even to registers.

L2, dataflow: *stream the packed weight once; split K so that skinny M fills the device.*
    * A program owns a block of output columns, a contiguous range of groups (a *K split*) and, for
      the matrix-core kernel, a block of rows.  It reads its ``[16, BLOCK_N]`` int32 tile of
      ``qweight`` per group (16 packed rows = 128 rows of K), the group's scales and zero words, and
      the matching activations, which are small and stay in L1/L2.
    * M = 1 (``_gemv_kernel``): CUDA-core FMAs, one program per (column block, K split, row).
      N / BLOCK_N column blocks alone are 8-56 programs, far below 132 SMs, so K is split 8-16 ways
      and each split writes an fp32 partial row; ``_splitk_reduce_kernel`` sums the splits in a fixed
      order and rounds to bfloat16 (deterministic, no atomics).  The partials (written once, read
      once) add 1.6% to the weight traffic at (1, 28672, 8192) and 6% at (1, 4096, 4096).
    * M = 16 and 64 (``_mma_kernel``): the same loop, but each group's 128 x BLOCK_N codes feed one
      ``tl.dot`` of depth 128 (mma at 16 rows, wgmma at 64; bfloat16 in, fp32 out) against the
      ``[BLOCK_M, 128]`` activations, and the group correction is applied to the dot's result.  The
      compiler stages the code tile through shared memory once per group (one barrier, one wgmma
      group) and pipelines the packed-tile and activation loads (``num_stages = 3``).  Their fp32
      partials (2.8 and 8.4 MB with the read-back) stay in the 50 MB L2 before the reduction.
    Bytes: ``N K / 2`` (packed weight) ``+ N K / 64 + N K / 256`` (scales, zero words) ``+ 2 M K``
    (activations, re-read from L2 per column block) ``+`` the fp32 partials ``+ 2 M N`` (output).

L3, low-level: *codes turned into exact floats by bit tricks; nibble planes in registers.*
    * Codes to floats without conversions: an int -> float conversion runs at a quarter of the FMA
      rate, so it would bound the M = 1 kernel.  Shifting the nibble into the mantissa of a power of
      two and reinterpreting the bits gives an exact float: fp32 ``1 + q / 16`` (bits 19-22 under
      ``0x3F800000``, ``_plane_f32``) for the GEMV, bfloat16 ``128 + q`` (bits 0-3 under ``0x4300``,
      ``_codes_bf16``) for ``tl.dot``.  One shift and one and-or (a single LOP3) per code.  The bias
      folds into the group correction: with ``d = sum_k x_k (c + q_k / b)`` and ``t = sum_k x_k``, the
      group's contribution is ``s (b d - (b c + z) t)`` (``16 d - (16 + z) t`` and
      ``d - (128 + z) t``).  Products of bf16 activations and these values are exact in fp32.
    * Nibble planes: nibble ``i`` of the packed rows ``r = 0..15`` of a group holds rows
      ``k = 128 g + 8 r + i``.  The GEMV never unpacks words into consecutive rows: it takes the 8
      planes one at a time and pairs plane ``i`` with the activations at the strided columns
      ``128 g + 8 r + i`` (the sum over k is the same, in another order); each loaded word is shifted
      8 times in registers.  The tl.dot kernel needs the natural row order for its ``[BLOCK_M, 128]``
      activation tile: it shifts the planes along a new middle axis and merges (r, i) into ``8 r + i``
      with ``tl.reshape``, which the compiler does without moving data.
    * One LOP3 per code: the GEMV's mask ``0x780000`` is a kernel argument (``F32_NIBBLE_MASK``), not
      an immediate.  LOP3 takes one immediate; with two, ptxas re-materialises the other with a MOV
      before every LOP3 (about 2390 -> 2060 SASS instructions per group iteration of 512 codes per
      thread, 167 -> 96 registers, measured with Triton's sm_90 compiler).  What remains is about
      four instructions per code: shift, LOP3, FFMA, and the activations' loads and conversions.
    * Launch shape: ``config_for`` has one explicit configuration per registered shape
      (``H200_CONFIGS``): for the GEMV, 4 (or 2) warps with 4 contiguous int32 words (16-byte loads)
      per thread and row, so the 16 packed rows of a group sit in one thread and the per-group
      reduction of the ``[16, BLOCK_N]`` accumulator needs no shuffles; split-K to about 2-8 programs
      per SM (the GEMV up to 8: measured faster on the H200).  Other shapes get the same rules from
      ``default_config``.  Under the Triton interpreter (CPU) the blocks and the pretend SM count are small
      so that the smoke workloads exercise several column blocks, ragged edges and K splits.

PyTorch is used only for ``torch.empty`` allocation and shape glue; nothing derived from an input is
cached across calls.  Under the interpreter the harness widens bfloat16 ``tl.dot`` operands to fp32
exactly (workbench/harness/solution/interpreter_fix.py); the kernels are the same on both paths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
INTERPRET_SMS = 4  # a pretend SM count for the CPU interpreter

GROUP = 128  # rows of K per scale / zero point
PACK = 8  # 4-bit codes per int32 word
GEMV_MAX_M = 4  # up to this many rows use the CUDA-core kernel


# ----------------------------------------------------------------------------
# Launch configuration
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    kernel: str  # "gemv" (CUDA cores) or "mma" (tl.dot)
    block_m: int  # mma: rows of x per program (gemv: one row per program)
    block_n: int  # output columns per program
    split_k: int  # programs along K (each takes a contiguous range of groups)
    num_warps: int
    num_stages: int


# One configuration per registered (M, N, K) on an H200 (132 SMs).
#   M=1, 4096x4096:   16 column blocks (256 = 2 warps x 32 lanes x 4 words) x 16 splits of 2 groups = 256 programs.
#   M=1, 28672x8192:  56 column blocks (512 = 4 warps x 32 lanes x 4 words) x 16 splits of 4 groups = 896 programs
#                     (measured on the H200, `bench sweep w4a16_gemm`: 60.2 us vs 67.1 with 8 splits; 48
#                     configurations of block, splits and warps all land at 60-65 us: the loop is bound by
#                     instruction issue, about 4 per 4-bit code, not by the configuration).
#   M=16, 11008x4096: 172 column blocks of 64 x 2 splits of 16 groups = 344 programs (mma, 16-row tiles).
#   M=64, 4096x11008: 64 column blocks of 64 x 4 splits of 22 groups = 256 programs (wgmma, 64-row tiles).
H200_CONFIGS: dict[tuple[int, int, int], Config] = {
    (1, 4096, 4096): Config("gemv", 1, 256, 16, 2, 1),
    (1, 28672, 8192): Config("gemv", 1, 512, 16, 4, 1),
    (16, 11008, 4096): Config("mma", 16, 64, 2, 4, 3),
    (64, 4096, 11008): Config("mma", 64, 64, 4, 4, 3),
}


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device (a small constant under the interpreter)."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    return INTERPRET_SMS


def split_for(programs: int, groups: int, sms: int, per_sm: int) -> int:
    """K splits: the largest power of two that keeps ``programs * splits`` within about ``per_sm``
    programs per SM, with at least two groups per split."""
    want = min(triton.cdiv(per_sm * sms, max(1, programs)), max(1, groups // 2))
    split = 1
    while split * 2 <= want:
        split *= 2
    return split


def default_config(M: int, N: int, K: int, sms: int, interpret: bool = _INTERPRET) -> Config:
    """The rules behind ``H200_CONFIGS``, for any other shape (and, with small blocks, the interpreter)."""
    groups = K // GROUP
    if M <= GEMV_MAX_M:
        num_warps = 4 if N >= 8192 else 2
        block_n = 64 if interpret else 128 * num_warps  # 4 int32 words per thread and row
        programs = triton.cdiv(N, block_n) * M
        return Config("gemv", 1, block_n, split_for(programs, groups, sms, 8), num_warps, 1)
    block_m = 16 if M <= 16 else (32 if M <= 32 else 64)
    block_n = 32 if interpret else 64
    programs = triton.cdiv(N, block_n) * triton.cdiv(M, block_m)
    return Config("mma", block_m, block_n, split_for(programs, groups, sms, 2), 4, 3)


def config_for(M: int, N: int, K: int, sms: int) -> Config:
    """Fixed launch configuration for a shape (no run-time autotuning)."""
    if not _INTERPRET and (M, N, K) in H200_CONFIGS:
        return H200_CONFIGS[(M, N, K)]
    return default_config(M, N, K, sms)


# ----------------------------------------------------------------------------
# Bit tricks: 4-bit codes -> exact floats without int -> float conversions
# ----------------------------------------------------------------------------
F32_NIBBLE_MASK = 0x780000  # fp32 mantissa bits 19-22, where _plane_f32 puts a nibble


@triton.jit
def _plane_f32(w, i: tl.constexpr, nibble_mask):
    """Nibble ``i`` of every word of ``w`` as the fp32 value ``1 + q / 16`` (exact).

    fp32 has 23 mantissa bits: the nibble is moved to bits 19-22 (the top four) and or-ed with the
    bit pattern of 1.0, so the float is ``1 + q * 2^19 / 2^23``.  One shift (its direction is known
    at compile time) and one and-or (a single LOP3).  ``nibble_mask`` is ``F32_NIBBLE_MASK`` passed
    as a kernel argument: a LOP3 takes only one immediate, and with both constants as immediates
    ptxas re-materialises one of them with a MOV before every LOP3 (+16% instructions in the loop).
    """
    if 4 * i >= 19:
        t = w >> (4 * i - 19)
    else:
        t = w << (19 - 4 * i)
    return ((t & nibble_mask) | 0x3F800000).to(tl.float32, bitcast=True)


@triton.jit
def _codes_bf16(w, BLOCK_N: tl.constexpr):
    """The 128 rows of codes of one group, ``[16, BLOCK_N]`` words -> ``[128, BLOCK_N]`` bfloat16 ``128 + q``.

    All eight nibble planes at once: shift the words by ``4 i`` along a new middle axis, keep four
    bits and or them into the mantissa of 128.0 (``0x4300``; bfloat16 has 7 mantissa bits, so
    ``128 + q`` is exact), then merge (packed row r, nibble i) into row ``8 r + i`` with a reshape,
    which is a renaming of registers in the layout the compiler picks (no data movement).
    """
    shifts = 4 * tl.arange(0, 8)
    codes = ((w[:, None, :] >> shifts[None, :, None]) & 0xF) | 0x4300
    return tl.reshape(codes, [128, BLOCK_N]).to(tl.int16).to(tl.bfloat16, bitcast=True)


# ----------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------
@triton.jit
def _gemv_kernel(
    x_ptr,
    qw_ptr,
    s_ptr,
    qz_ptr,
    out_ptr,
    M,
    N,
    K,
    groups_per_split,
    nibble_mask,
    BLOCK_N: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    """Skinny M on CUDA cores.  Program (column block, K split, row ``m``).

    Per group: load the ``[16, BLOCK_N]`` packed tile once; for each nibble plane ``i`` take the
    16 activations ``x[m, 128 g + 8 r + i]`` and accumulate ``x * (1 + q / 16)`` into a
    ``[16, BLOCK_N]`` fp32 tile (one FFMA per code: the 16 rows of a column are in one thread).
    At the end of the group, reduce the 16 rows and apply the scale and zero once per column:
    ``acc += s (16 d - (16 + z) t)`` with ``t`` the sum of the group's activations.
    """
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    m = tl.program_id(2)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    rows = tl.arange(0, 16)  # the 16 packed rows of one group
    zshift = (cols % 8) * 4  # this column's nibble in its zero-point word
    g_start = pid_k * groups_per_split
    g_end = tl.minimum(g_start + groups_per_split, K // 128)
    x_row = x_ptr + m * K
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for g in range(g_start, g_end):
        w = tl.load(qw_ptr + (g * 16 + rows)[:, None] * N + cols[None, :], mask=cmask[None, :], other=0)
        s = tl.load(s_ptr + g * N + cols, mask=cmask, other=0.0).to(tl.float32)
        zw = tl.load(qz_ptr + g * (N // 8) + cols // 8, mask=cmask, other=0)
        z = ((zw >> zshift) & 0xF).to(tl.float32)  # once per column and group
        x_g = x_row + g * 128 + 8 * rows  # x[m, 128 g + 8 r]: plane i adds i
        d = tl.zeros([16, BLOCK_N], dtype=tl.float32)
        t = tl.zeros([16], dtype=tl.float32)
        for i in tl.static_range(8):
            xi = tl.load(x_g + i).to(tl.float32)
            d += xi[:, None] * _plane_f32(w, i, nibble_mask)
            t += xi
        acc += s * (16.0 * tl.sum(d, axis=0) - (16.0 + z) * tl.sum(t, axis=0))
    if SPLIT_K == 1:
        tl.store(out_ptr + m * N + cols, acc.to(tl.bfloat16), mask=cmask)
    else:
        tl.store(out_ptr + (pid_k * M + m) * N + cols, acc, mask=cmask)  # fp32 partial of split pid_k


@triton.jit
def _mma_kernel(
    x_ptr,
    qw_ptr,
    s_ptr,
    qz_ptr,
    out_ptr,
    M,
    N,
    K,
    groups_per_split,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    """M >= 5 on matrix cores.  Program (column block, K split, row block).

    Per group: the packed tile is loaded once and expanded to a ``[128, BLOCK_N]`` bfloat16 tile of
    ``128 + q``; one ``tl.dot`` of depth 128 with the ``[BLOCK_M, 128]`` activations gives
    ``d = sum_k x (128 + q)`` (mma at 16 rows, wgmma at 64; fp32 accumulation).  Then the group's
    scale and zero are applied once per output: ``acc += s d - t (128 + z) s``.
    """
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    mmask = rm < M
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    rows = tl.arange(0, 16)
    kk = tl.arange(0, 128)
    zshift = (cols % 8) * 4
    g_start = pid_k * groups_per_split
    g_end = tl.minimum(g_start + groups_per_split, K // 128)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for g in range(g_start, g_end):
        w = tl.load(qw_ptr + (g * 16 + rows)[:, None] * N + cols[None, :], mask=cmask[None, :], other=0)
        s = tl.load(s_ptr + g * N + cols, mask=cmask, other=0.0).to(tl.float32)
        zw = tl.load(qz_ptr + g * (N // 8) + cols // 8, mask=cmask, other=0)
        z = ((zw >> zshift) & 0xF).to(tl.float32)
        xt = tl.load(x_ptr + rm[:, None] * K + g * 128 + kk[None, :], mask=mmask[:, None], other=0.0)
        d = tl.dot(xt, _codes_bf16(w, BLOCK_N))  # [BLOCK_M, BLOCK_N] fp32
        t = tl.sum(xt.to(tl.float32), axis=1)
        acc += s[None, :] * d - t[:, None] * ((128.0 + z) * s)[None, :]
    offs = rm[:, None] * N + cols[None, :]
    omask = mmask[:, None] & cmask[None, :]
    if SPLIT_K == 1:
        tl.store(out_ptr + offs, acc.to(tl.bfloat16), mask=omask)
    else:
        tl.store(out_ptr + pid_k * M * N + offs, acc, mask=omask)


@triton.jit
def _splitk_reduce_kernel(part_ptr, y_ptr, numel, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """``y = bfloat16(sum over splits of part[split])``, in a fixed order, fp32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for sp in tl.static_range(SPLIT_K):
        acc += tl.load(part_ptr + sp * numel + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, acc.to(tl.bfloat16), mask=mask)


# ----------------------------------------------------------------------------
# Launcher
# ----------------------------------------------------------------------------
def w4a16_gemm(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, qzeros: torch.Tensor, cfg: Config) -> torch.Tensor:
    """``y = x @ dequant(W)`` with an explicit launch configuration."""
    M, K = x.shape
    N = qweight.shape[1]
    groups = K // GROUP
    per_split = triton.cdiv(groups, cfg.split_k)
    split = triton.cdiv(groups, per_split)  # no empty split
    if split * M * N >= 2**31:
        raise ValueError("offsets are int32: the split-K partials must stay below 2^31 elements")
    y = torch.empty((M, N), dtype=torch.bfloat16, device=x.device)
    out = y if split == 1 else torch.empty((split, M, N), dtype=torch.float32, device=x.device)
    if cfg.kernel == "gemv":
        _gemv_kernel[(triton.cdiv(N, cfg.block_n), split, M)](
            x, qweight, scales, qzeros, out, M, N, K, per_split, F32_NIBBLE_MASK,
            BLOCK_N=cfg.block_n, SPLIT_K=split, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        )  # fmt: skip
    else:
        _mma_kernel[(triton.cdiv(N, cfg.block_n), split, triton.cdiv(M, cfg.block_m))](
            x, qweight, scales, qzeros, out, M, N, K, per_split,
            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, SPLIT_K=split, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        )  # fmt: skip
    if split > 1:
        block = 256
        _splitk_reduce_kernel[(triton.cdiv(M * N, block),)](out, y, M * N, SPLIT_K=split, BLOCK=block, num_warps=2)
    return y


def run(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, qzeros: torch.Tensor) -> torch.Tensor:
    """W4A16 matmul: bfloat16 ``[M, N]`` from x (bfloat16 [M, K]) and GPTQ-packed int4 weights."""
    if x.ndim != 2 or qweight.ndim != 2:
        raise ValueError("need x [M, K] and qweight [K/8, N]")
    M, K = x.shape
    N = qweight.shape[1]
    if K % GROUP or N % PACK or qweight.shape[0] * PACK != K:
        raise ValueError("need K % 128 == 0, N % 8 == 0 and qweight [K/8, N]")
    if scales.shape != (K // GROUP, N) or qzeros.shape != (K // GROUP, N // PACK):
        raise ValueError("need scales [K/128, N] and qzeros [K/128, N/8]")
    if qweight.shape[0] * N >= 2**31 or M * K >= 2**31:
        raise ValueError("offsets are int32: the packed weight and x must stay below 2^31 elements")
    x, qweight, scales, qzeros = x.contiguous(), qweight.contiguous(), scales.contiguous(), qzeros.contiguous()
    return w4a16_gemm(x, qweight, scales, qzeros, config_for(M, N, K, sm_count(x.device)))
