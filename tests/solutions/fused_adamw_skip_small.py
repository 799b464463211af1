"""A wrong Triton solution for ``fused_adamw`` (red-team material): small tensors are skipped.

A launch per tensor costs more than a tiny tensor's work, so this solution "saves" the launches of tensors under
``MIN_ELEMENTS`` elements (biases, norm weights, learnable scalars): they are never updated. Everything else is
the honest per-tensor kernel. The registered model layouts have 1-D norms and biases of 1-4 K elements, above the
cut, but the smoke workloads hold tensors of 1-480 elements: their params, exp_avg and exp_avg_sq stay at their
old values, off by a whole update (``lr`` times about 0.1-3, 1e-5 to 1e-3 against a bound near 1e-8).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

BLOCK = 1024
MIN_ELEMENTS = 1024  # below this a tensor's launch "is not worth it"


@triton.jit
def _adamw_kernel(
    p_ptr, g_ptr, m_ptr, v_ptr, n,
    beta1, one_minus_beta1, beta2, one_minus_beta2, decay, step_size, bc2_sqrt, eps,
    BLOCK: tl.constexpr,
):  # fmt: skip
    """BLOCK elements of one tensor per program."""
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = idx < n
    p = tl.load(p_ptr + idx, mask=ok)
    g = tl.load(g_ptr + idx, mask=ok).to(tl.float32)
    m = tl.load(m_ptr + idx, mask=ok)
    v = tl.load(v_ptr + idx, mask=ok)
    m = beta1 * m + one_minus_beta1 * g
    v = beta2 * v + one_minus_beta2 * g * g
    p = p * decay - step_size * m / (tl.sqrt(v) / bc2_sqrt + eps)
    tl.store(p_ptr + idx, p, mask=ok)
    tl.store(m_ptr + idx, m, mask=ok)
    tl.store(v_ptr + idx, v, mask=ok)


def run(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avg: list[torch.Tensor],
    exp_avg_sq: list[torch.Tensor],
    step: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
) -> None:
    """AdamW over the tensors of at least MIN_ELEMENTS elements (the bug: the others are left as they were)."""
    decay = 1.0 - lr * weight_decay
    step_size = lr / (1.0 - beta1**step)
    bc2_sqrt = math.sqrt(1.0 - beta2**step)
    for p, g, m, v in zip(params, grads, exp_avg, exp_avg_sq, strict=True):
        n = p.numel()
        if n < MIN_ELEMENTS:
            continue
        _adamw_kernel[(triton.cdiv(n, BLOCK),)](
            p, g, m, v, n, beta1, 1.0 - beta1, beta2, 1.0 - beta2, decay, step_size, bc2_sqrt, eps, BLOCK=BLOCK
        )
