"""Expert Triton solution for ``fused_adamw`` (the benchmark's gold standard).

Operator
--------
``run(params, grads, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay)``: one AdamW step over a
list of ``NT`` tensors (``P`` elements in all), float32 master weights and states, bfloat16 gradients, updated
in place::

    p = p (1 - lr wd);  m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
    p = p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)

14 FLOPs per element against 26 bytes that must move (read p, g, m, v: 4 + 2 + 4 + 4; write p, m, v: 12):
0.5 FLOP/byte, far below any GPU's balance point. The floor is the memory's: ``26 P`` bytes, 1.3-4.8 ms for
the registered lists (0.25-0.88 G parameters) at an H200's 4.8 TB/s. What stands between a kernel and that
floor is the traffic the eager optimiser adds (90 bytes per element over nine whole-tensor passes) and, with
many tensors, the cost of reaching each tensor at all (nine launches per tensor, 90,000 for 10,000 tensors).

Design
------
L1, algorithm: *one read/write pass per element.*
    All of AdamW's arithmetic is elementwise, so one program reads ``p, g, m, v`` once, keeps every
    intermediate (the upcast gradient, the new moments, the denominator) in registers and writes ``p, m, v``
    once: 26 bytes per element, the floor, against the reference's 90. The bias corrections, the decay factor
    and the step size depend only on the call's scalars: they are computed once per call on the host in
    float64 (Python floats, ``math``), not per element, and reach the kernel as float32 arguments.

L2, dataflow: *a multi-tensor work list: one launch per group of up to ``GROUP`` tensors.*
    A launch per tensor (the naive port) pays a launch for every bias vector and leaves most SMs idle under
    each small tensor. Instead the list is cut into groups of ``GROUP`` consecutive tensors (32 on a GPU), and
    one launch covers a group: its programs are the group's chunks (``CHUNK`` elements of one tensor each), laid
    end to end. The work list travels in the kernel's arguments, as in PyTorch's and apex's
    ``multi_tensor_apply`` (whose argument struct holds 36 tensors of 4 lists per launch): tuples of the
    group's four pointers per tensor, its sizes and each tensor's first program (prefix sums of the chunk
    counts: host arithmetic on the shapes, rebuilt every call). A program finds its tensor by comparing its id
    with those prefix sums (``GROUP`` scalar compares and selects, nothing loaded) and its chunk by the
    difference. Why not one launch over a device table of addresses: a solution writes device memory only
    from kernels (no ``torch.tensor``, no copies from the host), and a kernel learns addresses only from its
    arguments, so building such a table takes as many argument slots as launching the work itself. The lists
    take 4 (GPT), 10 (Llama), 32 (mixed) and 313 (10,000 tensors) launches against the reference's 9 NT. The
    last group is padded with empty slots (size 0, first program past the end): one compiled kernel serves
    every launch.

L3, low-level: *wide vector accesses over contiguous chunks, fp32 math, bf16 upcast in registers.*
    A program walks its chunk in ``BLOCK``-element steps (1024 on a GPU: 8 elements per thread of 4 warps).
    The whole steps carry no mask: the chunk starts at a multiple of ``CHUNK`` and the tensors are 16-byte
    aligned allocations (Triton specialises pointer arguments on it, tuple elements too), so each thread's 8
    float32 are two 16-byte loads and stores and its 8 bfloat16 one; only a tensor's last, ragged step is
    masked. The gradient is upcast to float32 in registers and all the math is float32 (PyTorch's opmath);
    bfloat16 states (the mixed list, SB = 2) are upcast the same way when loaded, the update uses the new
    float32 moments, and each store rounds its state once to nearest (18 bytes a parameter instead of 26). The
    chunk is chosen per group so that a launch has several programs per SM: ``blocks_per_chunk`` halves it
    (down to one step) while the group would have fewer than ``target_programs`` programs, and keeps 8 steps
    (8 K elements per program) for the big matrices. Sizes and first programs travel multiplied by 16: Triton
    specialises every integer argument, tuple elements included, on divisibility by 16 (and on the value 1),
    so raw counts would compile a new kernel for each group's pattern; times 16 they all look alike.
    Under the Triton interpreter (CPU) the tiles are small (groups of 4 tensors, 64-element steps), so the smoke
    workloads run several groups, a padded last group, chunks of one and two steps and ragged tails.

Measured on an H200 (CUDA events): 5.8 ms for the 0.88 G-parameter GPT list (82% of the 4.8 TB/s floor,
4.0 TB/s), 3.1 ms for the Llama layout, 3.7 ms for the mixed list; the reference takes 21, 22 and 109 ms and
the library's fused AdamW (after its grad upcast) 10, 6.3 and 18 ms. The 10,000-tensor list (41 ms, 1.3 ms of
traffic) is bound by the host: Triton's launcher handles each argument in Python, about 4 us per tensor of the
group (6 arguments), against the reference's 820 ms and the library's 129 ms (10,000 upcasts).

PyTorch is used only for the tensors' sizes (``numel``); the tensors themselves are the kernel's arguments.
Nothing is cached across calls, and nothing waits on the device.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import triton
import triton.language as tl


class Config(NamedTuple):
    group: int  # tensors per launch (each brings 4 pointers, a size and a first program: 6 arguments)
    block: int  # elements per vector step of a program
    max_blocks_per_chunk: int  # steps per program for large groups (a chunk is block * blocks_per_chunk)
    target_programs: int  # programs per launch below which chunks shrink
    num_warps: int


# On an H200 (measured, CUDA events): groups of 32 tensors took 3.7 ms on the mixed list and 41 ms on the 10,000
# tensors, against 5.7 and 64 ms with groups of 64 (96: 4.9 and 36 ms); 2048-element steps with 8 warps and
# 16-step chunks were no faster on the big matrices (5.8-6.4 ms on the GPT list).
H200_CONFIG = Config(group=32, block=1024, max_blocks_per_chunk=8, target_programs=4 * 132, num_warps=4)
INTERPRET_CONFIG = Config(group=4, block=64, max_blocks_per_chunk=2, target_programs=8, num_warps=4)


def config_for(device: torch.device) -> Config:
    """Fixed configuration (no run-time autotuning)."""
    return H200_CONFIG if device.type == "cuda" else INTERPRET_CONFIG


def blocks_per_chunk(sizes: list[int], cfg: Config) -> int:
    """The most steps per program (a power of two up to the configuration's) that still gives the group
    ``target_programs`` programs; one step when even that gives fewer."""
    per = cfg.max_blocks_per_chunk
    while per > 1 and sum(-(-n // (cfg.block * per)) for n in sizes) < cfg.target_programs:
        per //= 2
    return per


@triton.jit
def _adamw_elements(
    p_ptr, g_ptr, m_ptr, v_ptr, idx, mask,
    beta1, one_minus_beta1, beta2, one_minus_beta2, decay, step_size, bc2_sqrt, eps,
):  # fmt: skip
    """The whole step for the elements ``idx`` of one tensor: read p, g, m, v once, write p, m, v once."""
    p = tl.load(p_ptr + idx, mask=mask)
    g = tl.load(g_ptr + idx, mask=mask).to(tl.float32)  # bf16 -> fp32 in registers
    m = tl.load(m_ptr + idx, mask=mask).to(tl.float32)  # float32 or bfloat16 states
    v = tl.load(v_ptr + idx, mask=mask).to(tl.float32)
    m = beta1 * m + one_minus_beta1 * g
    v = beta2 * v + one_minus_beta2 * g * g
    denom = tl.sqrt(v) / bc2_sqrt + eps
    p = p * decay - step_size * m / denom
    tl.store(p_ptr + idx, p, mask=mask)
    tl.store(m_ptr + idx, m, mask=mask)
    tl.store(v_ptr + idx, v, mask=mask)


@triton.jit
def _adamw_group_kernel(
    p_ptrs, g_ptrs, m_ptrs, v_ptrs, sizes, firsts,
    beta1, one_minus_beta1, beta2, one_minus_beta2, decay, step_size, bc2_sqrt, eps,
    GROUP: tl.constexpr, BLOCK: tl.constexpr, BLOCKS_PER_CHUNK: tl.constexpr,
):  # fmt: skip
    """One program: one chunk of one tensor of the group. ``p_ptrs`` ... ``v_ptrs`` (not ``params``: Triton's
    generated argument binder has a local of that name) are tuples of the group's pointers, ``sizes`` its element
    counts and ``firsts`` the first program of each tensor (non-decreasing; an empty or padding slot has no
    program), both times 16 (see ``run``)."""
    pid = tl.program_id(0)
    # the tensor: the last slot whose first program is <= pid (scalar selects over the argument tuples)
    p_ptr, g_ptr, m_ptr, v_ptr = p_ptrs[0], g_ptrs[0], m_ptrs[0], v_ptrs[0]
    n, first = sizes[0], firsts[0]
    for j in tl.static_range(1, GROUP):
        here = pid * 16 >= firsts[j]
        p_ptr = tl.where(here, p_ptrs[j], p_ptr)
        g_ptr = tl.where(here, g_ptrs[j], g_ptr)
        m_ptr = tl.where(here, m_ptrs[j], m_ptr)
        v_ptr = tl.where(here, v_ptrs[j], v_ptr)
        n = tl.where(here, sizes[j], n)
        first = tl.where(here, firsts[j], first)
    n = n >> 4
    first = first >> 4
    # the chunk: CHUNK elements from (pid - first) * CHUNK, the tensor's last one ragged
    CHUNK: tl.constexpr = BLOCK * BLOCKS_PER_CHUNK
    start = (pid - first).to(tl.int64) * CHUNK
    stop = tl.minimum(start + CHUNK, n)
    full_stop = start + (stop - start) // BLOCK * BLOCK
    offs = tl.arange(0, BLOCK)
    for base in range(start, full_stop, BLOCK):  # whole steps: no mask, 16-byte vector accesses
        _adamw_elements(
            p_ptr, g_ptr, m_ptr, v_ptr, base + offs, None,
            beta1, one_minus_beta1, beta2, one_minus_beta2, decay, step_size, bc2_sqrt, eps,
        )  # fmt: skip
    if full_stop < stop:  # the tensor's ragged end
        idx = full_stop + offs
        _adamw_elements(
            p_ptr, g_ptr, m_ptr, v_ptr, idx, idx < stop,
            beta1, one_minus_beta1, beta2, one_minus_beta2, decay, step_size, bc2_sqrt, eps,
        )  # fmt: skip


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
    """One AdamW step over the lists, in place (see the module's docstring)."""
    count = len(params)
    if not count or not (len(grads) == len(exp_avg) == len(exp_avg_sq) == count):
        raise ValueError("params, grads, exp_avg and exp_avg_sq must be lists of the same (non-zero) length")
    cfg = config_for(params[0].device)
    # the step's scalars, once (float64 on the host; the kernel gets them as float32)
    scalars = (
        beta1,
        1.0 - beta1,
        beta2,
        1.0 - beta2,
        1.0 - lr * weight_decay,
        lr / (1.0 - beta1**step),
        math.sqrt(1.0 - beta2**step),
        eps,
    )
    for lo in range(0, count, cfg.group):
        hi = min(lo + cfg.group, count)
        sizes = [t.numel() for t in params[lo:hi]]
        per = blocks_per_chunk(sizes, cfg)
        firsts = [0] * cfg.group
        total = 0
        for j, n in enumerate(sizes):
            firsts[j] = total
            total += -(-n // (cfg.block * per))  # ceil: plain integers (triton.cdiv costs ~10 us a call)
        pad = cfg.group - len(sizes)  # empty slots: repeat the last tensor, size 0, first program past the end
        firsts[len(sizes) :] = [total] * pad
        if total == 0:
            continue
        _adamw_group_kernel[(total,)](
            tuple(params[lo:hi]) + (params[hi - 1],) * pad,
            tuple(grads[lo:hi]) + (grads[hi - 1],) * pad,
            tuple(exp_avg[lo:hi]) + (exp_avg[hi - 1],) * pad,
            tuple(exp_avg_sq[lo:hi]) + (exp_avg_sq[hi - 1],) * pad,
            # times 16: Triton specialises each integer (tuple elements too) on divisibility by 16 and on the
            # value 1; raw counts would compile a kernel per group's pattern, these all look alike
            tuple(16 * n for n in sizes) + (0,) * pad,
            tuple(16 * f for f in firsts),
            *scalars,
            GROUP=cfg.group,
            BLOCK=cfg.block,
            BLOCKS_PER_CHUNK=per,
            num_warps=cfg.num_warps,
        )
