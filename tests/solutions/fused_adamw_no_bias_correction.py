"""A wrong Triton solution for ``fused_adamw`` (red-team material): Adam without its bias corrections.

The kernel is the honest per-tensor step except that it uses the raw moments, ``p -= lr m / (sqrt(v) + eps)``,
as if ``1 - beta1^step`` and ``1 - beta2^step`` were 1 (true only late in training). The inputs draw ``step``
where ``beta2^step >= 0.01``, so the missing ``sqrt(1 - beta2^step)`` alone scales every update by 0.995 or less
(and by up to 20x at the earliest steps): an error of 5e-3 of an update of ~1e-5 to 1e-4, far above the params'
bound of about 1e-6 of |p|.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _adamw_kernel(
    p_ptr, g_ptr, m_ptr, v_ptr, n, beta1, one_minus_beta1, beta2, one_minus_beta2, decay, lr, eps, BLOCK: tl.constexpr
):
    """BLOCK elements of one tensor per program."""
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = idx < n
    p = tl.load(p_ptr + idx, mask=ok)
    g = tl.load(g_ptr + idx, mask=ok).to(tl.float32)
    m = tl.load(m_ptr + idx, mask=ok)
    v = tl.load(v_ptr + idx, mask=ok)
    m = beta1 * m + one_minus_beta1 * g
    v = beta2 * v + one_minus_beta2 * g * g
    p = p * decay - lr * m / (tl.sqrt(v) + eps)  # the bug: no bias corrections
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
    """AdamW without bias correction (the bug), one launch per tensor; ``step`` is ignored."""
    decay = 1.0 - lr * weight_decay
    for p, g, m, v in zip(params, grads, exp_avg, exp_avg_sq, strict=True):
        n = p.numel()
        _adamw_kernel[(triton.cdiv(n, BLOCK),)](
            p, g, m, v, n, beta1, 1.0 - beta1, beta2, 1.0 - beta2, decay, lr, eps, BLOCK=BLOCK
        )
