"""Input generation for the ``w4a16_gemm`` task.

The weight format is GPTQ's packed int4 layout (AutoGPTQ / GPTQModel checkpoints with
``bits = 4``, ``group_size = 128``, ``desc_act = False``, asymmetric), with zero points stored as
they are used (GPTQModel's ``gptq_v2`` convention, not the v1 checkpoints' ``zero - 1``):

* ``qweight`` int32 ``[K / 8, N]``: word ``(r, n)`` holds the 4-bit codes of rows ``k = 8 r + i``
  (``i = 0..7``) of column ``n`` in bits ``4 i .. 4 i + 3`` (least significant nibble first).
* ``qzeros`` int32 ``[K / 128, N / 8]``: word ``(g, c)`` holds the zero points of columns
  ``n = 8 c + j`` of group ``g`` in bits ``4 j .. 4 j + 3``.
* ``scales`` bfloat16 ``[K / 128, N]``: one scale per group of 128 rows and column (the model
  dtype, as serving engines keep them after loading).

``W[k, n] = (q[k, n] - z[k // 128, n]) * s[k // 128, n]`` and ``y = x @ W``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

GROUP = 128  # rows of K that share one scale and one zero point
PACK = 8  # 4-bit codes per int32 word
MAXQ = 15  # largest 4-bit code


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def pack_nibbles(codes: torch.Tensor, dim: int) -> torch.Tensor:
    """Pack 4-bit codes (integers in [0, 15]) eight to an int32 word along ``dim``.

    Element ``8 j + i`` along ``dim`` lands in bits ``4 i .. 4 i + 3`` of word ``j``; the words are
    the two's-complement int32 view of the unsigned 32-bit value (a code >= 8 in slot 7 makes the
    word negative).
    """
    c = codes.to(torch.int64).movedim(dim, -1)
    if c.shape[-1] % PACK:
        raise ValueError(f"dimension {dim} has {c.shape[-1]} codes, not a multiple of {PACK}")
    c = c.reshape(*c.shape[:-1], c.shape[-1] // PACK, PACK)
    shifts = torch.arange(0, 4 * PACK, 4, device=c.device, dtype=torch.int64)
    words = (c << shifts).sum(dim=-1)
    words = torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)
    return words.movedim(-1, dim).contiguous()


def quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Round-to-nearest asymmetric int4 quantisation of a float32 ``[K, N]`` weight, groups of 128 rows.

    Per group and column, as GPTQ's quantiser does: ``lo = min(w, 0)``, ``hi = max(w, 0)``,
    ``s = (hi - lo) / 15`` (stored as bfloat16; the codes are computed with the stored scale),
    ``z = round(-lo / s)`` and ``q = clamp(round(w / s) + z, 0, 15)``.
    Returns ``(qweight, scales, qzeros)`` in the packed layout of the module docstring.
    """
    K, N = w.shape
    groups = w.reshape(K // GROUP, GROUP, N)
    lo = groups.amin(dim=1).clamp_max(0.0)
    hi = groups.amax(dim=1).clamp_min(0.0)
    scales = ((hi - lo) / MAXQ).clamp_min(1e-8).to(torch.bfloat16)
    s = scales.float()
    zeros = torch.round(-lo / s).clamp(0, MAXQ)
    codes = (torch.round(groups / s.unsqueeze(1)) + zeros.unsqueeze(1)).clamp(0, MAXQ).reshape(K, N)
    return pack_nibbles(codes, 0), scales.contiguous(), pack_nibbles(zeros, 1)


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"x", "qweight", "scales", "qzeros"}`` deterministically from ``seed``.

    * ``x`` (bfloat16 ``[M, K]``): activations entering a Llama projection, ``Z * r_m * c_k`` with
      ``Z`` iid standard normal, a per-row (token) scale ``r_m`` log-uniform on [0.5, 2], a
      per-channel scale ``c_k`` log-uniform on [0.5, 2], and one channel in 128 (random positions)
      an outlier channel ten times larger, as LLM hidden states have.
    * The weight (float32 ``[K, N]``, never an input itself): ``0.02 * Z' * o_n`` with a per-output
      channel scale ``o_n`` log-uniform on [0.5, 2] and heavy tails (2% of the entries, at random
      positions, four times larger). The tails make each group's range lopsided, so the zero
      points spread over most of [0, 15] rather than sitting at 8.
    * ``qweight``, ``scales``, ``qzeros``: that weight quantised by ``quantize`` (round to nearest,
      asymmetric, groups of 128 rows) and packed.

    Everything is sampled in float32 with a ``torch.Generator`` on ``device``.
    """
    M, N, K = int(workload["M"]), int(workload["N"]), int(workload["K"])
    if not (M > 0 and N > 0 and K > 0) or K % GROUP or N % PACK:
        raise ValueError(f"need M, N, K > 0, K % {GROUP} == 0 and N % {PACK} == 0, got M={M}, N={N}, K={K}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.randn((M, K), generator=gen, device=dev, dtype=torch.float32)
    channel = _log_uniform((1, K), 0.5, 2.0, gen, dev)
    outliers = torch.rand((1, K), generator=gen, device=dev) < 1.0 / GROUP
    channel = torch.where(outliers, 10.0 * channel, channel)
    x.mul_(_log_uniform((M, 1), 0.5, 2.0, gen, dev)).mul_(channel)
    w = torch.randn((K, N), generator=gen, device=dev, dtype=torch.float32)
    w.mul_(0.02 * _log_uniform((1, N), 0.5, 2.0, gen, dev))
    tails = torch.rand((K, N), generator=gen, device=dev) < 0.02
    w = torch.where(tails, 4.0 * w, w)
    qweight, scales, qzeros = quantize(w)
    return {"x": x.to(torch.bfloat16).contiguous(), "qweight": qweight, "scales": scales, "qzeros": qzeros}
