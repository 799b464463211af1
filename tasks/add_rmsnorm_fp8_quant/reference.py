"""Reference semantics for the ``add_rmsnorm_fp8_quant`` task.

The prologue of an FP8 block-wise linear layer in DeepSeek-V3-style models
(SGLang, vLLM): residual add, RMSNorm, then per-token-group (1 x 128) FP8 e4m3
quantisation with one float32 scale per group. Per row of ``x [M, N]``::

    s        = x + residual                        # float32
    residual <- bfloat16(s)                        # the residual stream, updated in place
    h        = s / sqrt(mean(s^2) + eps) * weight  # RMSNorm
    for each group g of 128 columns:
        scale[g] = any positive finite float       # amax(|h_g|) / 448 in the reference
        y[g]     = float8_e4m3fn(h_g / scale[g])   # |y| <= 448

The outputs are judged through ``dequantized(outputs, inputs)``: ``y * scale``
(each scale repeated over its 128 columns) must approximate ``h``. A solution may
choose any positive finite scale per group (``amax / 448``, a power of two, ...)
as long as the dequantised values are accurate.
"""

from __future__ import annotations

from typing import Any

import torch

EPS: float = 1e-6  # the RMSNorm epsilon (DeepSeek-V3's rms_norm_eps); the only accepted value
GROUP: int = 128  # columns per quantisation group (DeepSeek-V3's 1 x 128 activation blocks)
FP8_MAX: float = 448.0  # largest finite float8_e4m3fn
SCALE_MIN: float = 1e-10  # amax is clamped below by this (SGLang's per_token_group_quant eps)


def _check(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if eps != EPS:
        raise ValueError(f"eps must be {EPS}, got {eps}")
    if x.ndim != 2 or residual.shape != x.shape:
        raise ValueError(f"x and residual must both be [M, N], got {tuple(x.shape)} and {tuple(residual.shape)}")
    if weight.shape != (x.shape[1],):
        raise ValueError(f"weight must be [N], got {tuple(weight.shape)}")
    if x.shape[1] % GROUP:
        raise ValueError(f"N must be a multiple of {GROUP}, got {x.shape[1]}")
    if x.dtype != torch.bfloat16 or residual.dtype != torch.bfloat16 or weight.dtype != torch.bfloat16:
        raise ValueError("x, residual and weight must be bfloat16")


def reference(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager PyTorch as model code writes it without custom kernels.

    vLLM's ``RMSNorm.forward_static`` with a residual (float32 add, residual written back as bfloat16,
    float32 normalisation, cast to bfloat16, times the bfloat16 weight), then SGLang's native
    ``per_token_group_quant_fp8`` (group amax, scale = amax / 448, divide, clamp, cast).
    ``x``, ``residual``: bfloat16 ``[M, N]``; ``weight``: bfloat16 ``[N]``; ``eps`` must be 1e-6.
    ``residual`` is updated in place. Returns ``(y, scales)``: a new contiguous float8_e4m3fn
    ``[M, N]`` and a new contiguous float32 ``[M, N / 128]``.
    """
    _check(x, residual, weight, eps)
    M, N = x.shape
    s = x.float() + residual.float()
    residual.copy_(s)  # the new residual stream, rounded to bfloat16
    variance = s.pow(2).mean(dim=-1, keepdim=True)
    h = (s * torch.rsqrt(variance + eps)).to(torch.bfloat16) * weight
    groups = h.view(M, N // GROUP, GROUP)
    amax = groups.abs().amax(dim=-1, keepdim=True).float().clamp(min=SCALE_MIN)
    scales = amax / FP8_MAX
    y = (groups / scales).clamp(min=-FP8_MAX, max=FP8_MAX).to(torch.float8_e4m3fn)
    return y.view(M, N).contiguous(), scales.view(M, N // GROUP).contiguous()


def exact(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 oracle: the unquantised values, with unit scales.

    ``residual`` is updated in place to bfloat16(x + residual) (the sum rounded once). ``y`` is the
    float64 RMSNorm of the exact sum times the weight, unquantised, and ``scales`` are all 1 (float64
    ``[M, N / 128]``), so ``dequantized`` of the oracle's outputs is the exact value. A solution that
    normalises the bfloat16-rounded residual instead of the float32 sum differs by <= 2^-9 per element,
    far inside the FP8 tolerance.
    """
    _check(x, residual, weight, eps)
    M, N = x.shape
    s = x.double() + residual.double()
    residual.copy_(s)
    h = s * torch.rsqrt(s.square().mean(dim=-1, keepdim=True) + eps) * weight.double()
    return h, torch.ones((M, N // GROUP), dtype=torch.float64, device=x.device)


def dequantized(outputs: dict[str, torch.Tensor], inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The values compared with the oracle's: ``y * scale`` in float64, two views of it.

    * ``y``: the dequantised ``[M, N]`` matrix (one relative Frobenius error for the whole call);
    * ``y_groups``: the same values as ``[M * N / 128, 1, 128]``, one "matrix" per quantisation group,
      so that each group's relative error is held to a bound on its own.

    Raises ``ValueError`` for invalid outputs: a scale that is not positive and finite, or a NaN in
    ``y`` (float8_e4m3fn has no infinity; its NaN is the bit pattern 0x7f / 0xff).
    """
    y, scales = outputs["y"], outputs["scales"]
    M, N = y.shape
    if scales.shape != (M, N // GROUP):
        raise ValueError(f"scales must be [M, N / {GROUP}] = [{M}, {N // GROUP}], got {list(scales.shape)}")
    s = scales.double()
    if not bool(torch.isfinite(s).all()) or not bool((s > 0).all()):
        bad = int((~torch.isfinite(s) | (s <= 0)).sum())
        raise ValueError(f"{bad} of {s.numel()} scales are not positive and finite")
    v = y.double()
    if bool(torch.isnan(v).any()):
        raise ValueError(f"{int(torch.isnan(v).sum())} of {v.numel()} values of y are NaN")
    deq = (v.view(M, N // GROUP, GROUP) * s.unsqueeze(-1)).view(M, N)
    return {"y": deq, "y_groups": deq.view(M * (N // GROUP), 1, GROUP)}
