"""Honest, straightforward Triton solution for ``fused_adamw``: one launch per tensor.

Each tensor gets its own launch of an elementwise kernel that reads ``p, g, m, v`` once and writes ``p, m, v``
once (AdamW's whole step fused per element, fp32 math, the bias corrections computed on the host). Correct,
and at the floor's bytes for a large tensor, but a list of ``NT`` tensors costs ``NT`` launches (10,000 for the
many-small workload), each small tensor filling a few SMs for a few microseconds. Every access is masked.
PyTorch is used for nothing but the tensors' sizes.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

BLOCK = 1024


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
    m = tl.load(m_ptr + idx, mask=ok).to(tl.float32)  # float32 or bfloat16 states
    v = tl.load(v_ptr + idx, mask=ok).to(tl.float32)
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
    """One AdamW step over the lists, in place: one launch per tensor."""
    decay = 1.0 - lr * weight_decay
    step_size = lr / (1.0 - beta1**step)
    bc2_sqrt = math.sqrt(1.0 - beta2**step)
    for p, g, m, v in zip(params, grads, exp_avg, exp_avg_sq, strict=True):
        n = p.numel()
        _adamw_kernel[(triton.cdiv(n, BLOCK),)](
            p, g, m, v, n, beta1, 1.0 - beta1, beta2, 1.0 - beta2, decay, step_size, bc2_sqrt, eps, BLOCK=BLOCK
        )
