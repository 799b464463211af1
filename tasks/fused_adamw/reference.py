"""Reference semantics for the ``fused_adamw`` task.

One AdamW step (decoupled weight decay, Loshchilov & Hutter; PyTorch's ``torch.optim.AdamW``) over a list of
parameter tensors with float32 master weights, bfloat16 gradients and float32 states (bfloat16 states on the
workloads with ``SB = 2``: the math stays float32, each state rounded once when stored). Per element, with the
hyper-parameters of the call (``step`` is the step this update makes, 1 for the first)::

    p = p * (1 - lr * weight_decay)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p = p - (lr / (1 - beta1^step)) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)

``p``, ``m`` (exp_avg) and ``v`` (exp_avg_sq) are updated in place; nothing is returned.

``reference()`` is what ``torch.optim.AdamW(foreach=False, fused=False)`` runs (its single-tensor path), in
eager PyTorch: a Python loop over the tensors, each tensor's update a handful of whole-tensor ops, vectorised
per tensor; bfloat16 states are upcast to float32 copies and written back after the step (what
memory-saving optimisers that keep bfloat16 states do in eager code). ``library()`` is PyTorch's fused AdamW
kernel (``torch._fused_adamw_``, what ``torch.optim.AdamW(fused=True)`` calls): it wants gradients and states
of the parameters' dtype, so the bfloat16 gradients (and bfloat16 states) are first upcast to float32 copies
(the states copied back after). ``exact()`` is the oracle: the same step in float64 from the same inputs, each
state rounded once to its dtype when written back.
"""

from __future__ import annotations

import math

import torch


def _check(
    params: list[torch.Tensor], grads: list[torch.Tensor], exp_avg: list[torch.Tensor], exp_avg_sq: list[torch.Tensor], step: int
) -> None:
    """Raise ``ValueError`` unless the lists meet the contract."""
    if not (len(params) == len(grads) == len(exp_avg) == len(exp_avg_sq)) or not params:
        raise ValueError("params, grads, exp_avg and exp_avg_sq must be lists of the same (non-zero) length")
    states = exp_avg[0].dtype
    if states not in (torch.float32, torch.bfloat16):
        raise ValueError(f"the states must be float32 or bfloat16, not {states}")
    for i, (p, g, m, v) in enumerate(zip(params, grads, exp_avg, exp_avg_sq, strict=True)):
        if not (p.shape == g.shape == m.shape == v.shape):
            raise ValueError(f"tensor {i}: shapes differ: {tuple(p.shape)}, {tuple(g.shape)}, {tuple(m.shape)}, {tuple(v.shape)}")
        if p.dtype != torch.float32 or g.dtype != torch.bfloat16 or m.dtype != states or v.dtype != states:
            raise ValueError(f"tensor {i}: params must be float32, grads bfloat16 and both states {states}")
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"step must be an int >= 1 (the step this update makes), got {step!r}")


def reference(
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
    """``torch.optim.AdamW``'s single-tensor step in eager PyTorch (float32), updating the states in place.

    Bytes moved per element by each op (float32 4, bfloat16 2; written in the roofline's reference_bytes):
    ``g.float()`` 6, ``mul_`` 8, ``lerp_`` 12, ``mul_`` 8, ``addcmul_`` 16 (v and g twice in, v out),
    ``sqrt`` 8, ``/`` 8, ``add_`` 8, ``addcdiv_`` 16: 90. With bfloat16 states, their upcasts (6 each) and
    write-backs (6 each): 114.
    """
    _check(params, grads, exp_avg, exp_avg_sq, step)
    bias_correction1 = 1 - beta1**step
    bias_correction2_sqrt = math.sqrt(1 - beta2**step)
    step_size = lr / bias_correction1
    for p, g, m_stored, v_stored in zip(params, grads, exp_avg, exp_avg_sq, strict=True):
        grad = g.float()
        m, v = m_stored.float(), v_stored.float()  # the stored states themselves when they are float32
        p.mul_(1 - lr * weight_decay)
        m.lerp_(grad, 1 - beta1)
        v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (v.sqrt() / bias_correction2_sqrt).add_(eps)
        p.addcdiv_(m, denom, value=-step_size)
        if m is not m_stored:  # bfloat16 states: each rounded once, after the step
            m_stored.copy_(m)
            v_stored.copy_(v)


def library(
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
    """The library call a practitioner has instead (task.toml ``[library]``): ``torch._fused_adamw_``, PyTorch's
    multi-tensor fused AdamW (CUDA; a vectorised CPU kernel too). It takes one float32 step count per tensor
    (the optimiser's state; one tensor shared here) and gradients of the parameters' dtype: the bfloat16
    gradients are upcast to new float32 tensors first (6 more bytes per element, and 4 instead of 2 read by
    the kernel). bfloat16 states are upcast to float32 copies too and copied back after the kernel (the fused
    kernel takes one dtype for the parameters and their states). Updates the states in place."""
    _check(params, grads, exp_avg, exp_avg_sq, step)
    steps = [torch.full((), float(step), dtype=torch.float32, device=params[0].device)] * len(params)
    upcast = exp_avg[0].dtype != torch.float32
    ms = [m.float() for m in exp_avg] if upcast else exp_avg
    vs = [v.float() for v in exp_avg_sq] if upcast else exp_avg_sq
    torch._fused_adamw_(
        params,
        [g.float() for g in grads],
        ms,
        vs,
        [],
        steps,
        lr=lr,
        beta1=beta1,
        beta2=beta2,
        weight_decay=weight_decay,
        eps=eps,
        amsgrad=False,
        maximize=False,
    )
    if upcast:
        torch._foreach_copy_(exp_avg, ms)
        torch._foreach_copy_(exp_avg_sq, vs)


def exact(
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
    """Float64 oracle: the step with every value in float64 (the hyper-parameters are Python floats); each state
    is written back rounded once to its dtype (float32, or bfloat16 where SB = 2). The step is elementwise, so
    the lists are taken as one run of elements, in passes of at most ``EXACT_PASS`` elements (``EXACT_PASS_CPU``
    on the CPU; consecutive tensors gathered, a larger tensor in parts): a few dozen operations per pass, not
    per tensor, and float64 scratch of a bounded size. Each element's value is the one a tensor-by-tensor
    float64 step gives, bit for bit (tests/test_fused_adamw.py)."""
    _check(params, grads, exp_avg, exp_avg_sq, step)
    if not all(t.is_contiguous() for ts in (params, grads, exp_avg, exp_avg_sq) for t in ts):
        raise ValueError("exact() takes contiguous tensors (it updates flat views of them)")
    step_size = lr / (1 - beta1**step)
    bias_correction2_sqrt = math.sqrt(1 - beta2**step)
    sizes = [p.numel() for p in params]
    flat = [[t.view(-1) for t in ts] for ts in (params, grads, exp_avg, exp_avg_sq)]
    for pieces in passes(sizes, EXACT_PASS_CPU if params[0].device.type == "cpu" else EXACT_PASS):
        p, g, m, v = ([f[i] if b - a == sizes[i] else f[i][a:b] for i, a, b in pieces] for f in flat)
        g64 = torch.cat(g).double()
        m64 = beta1 * torch.cat(m).double() + (1 - beta1) * g64
        v64 = beta2 * torch.cat(v).double() + (1 - beta2) * g64 * g64
        p64 = torch.cat(p).double() * (1 - lr * weight_decay) - step_size * m64 / (v64.sqrt() / bias_correction2_sqrt + eps)
        lengths = [b - a for _, a, b in pieces]
        for ranges, value in ((p, p64), (m, m64), (v, v64)):  # each rounded once to its list's dtype, as copy_ does
            torch._foreach_copy_(ranges, list(value.to(ranges[0].dtype).split(lengths)))


EXACT_PASS = 1 << 22  # elements per float64 pass of exact() on a GPU: 32 MiB per float64 array, ~0.3 GiB of scratch
EXACT_PASS_CPU = 1 << 16  # on the CPU: passes that stay in cache (2-6x faster there than 1 << 22, measured)


def passes(sizes: list[int], limit: int) -> list[list[tuple[int, int, int]]]:
    """The elements of tensors of ``sizes`` elements as passes of at most ``limit`` elements, in order: each
    pass a list of (tensor, start, stop) ranges of flat element indices (consecutive tensors whole where they
    fit, a larger one split across passes)."""
    out: list[list[tuple[int, int, int]]] = [[]]
    room = limit
    for i, size in enumerate(sizes):
        start = 0
        while start < size:
            if room == 0:
                out.append([])
                room = limit
            stop = min(size, start + room)
            out[-1].append((i, start, stop))
            room -= stop - start
            start = stop
    return [pieces for pieces in out if pieces]
