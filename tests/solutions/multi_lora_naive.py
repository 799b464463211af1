"""Honest, straightforward Triton solution for ``multi_lora``: one program per token and slice.

Each program finds its token's request by counting the segment starts at or before it, reads the request's
adapter, forms the shrink ``v = lora_a[s, a] @ x[t]`` with CUDA-core products summed over column chunks, then
writes ``base + scaling * lora_b[s, a] @ v`` chunk by chunk. The adapter's weights are re-read for every
token (no tiles shared between a request's tokens, no tensor cores). PyTorch is used only for allocation.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

COLS = 32


@triton.jit
def _token_kernel(
    x_ptr, a_ptr, b_ptr, base_ptr, y_ptr, seg_starts_ptr, seg_adapters_ptr, scaling, nseg, H, N, A, S,
    R: tl.constexpr, SEG_PAD: tl.constexpr, COLS: tl.constexpr,
):  # fmt: skip
    t = tl.program_id(0)
    s = tl.program_id(1)
    segs = tl.arange(0, SEG_PAD)
    starts = tl.load(seg_starts_ptr + segs, mask=segs < nseg, other=2147483647)
    g = tl.sum((starts <= t).to(tl.int32), axis=0) - 1
    a = tl.load(seg_adapters_ptr + g)
    ranks = tl.arange(0, R)
    v = tl.zeros([R], dtype=tl.float32)
    if a >= 0:
        for c in range(0, H, COLS):
            cols = c + tl.arange(0, COLS)
            xs = tl.load(x_ptr + t * H + cols, mask=cols < H, other=0.0).to(tl.float32)
            w = tl.load(a_ptr + ((s * A + a) * R + ranks[:, None]) * H + cols[None, :], mask=(cols < H)[None, :], other=0.0)
            v += tl.sum(w.to(tl.float32) * xs[None, :], axis=1)
    for c in range(0, N, COLS):
        cols = c + tl.arange(0, COLS)
        out = tl.load(base_ptr + t * S * N + s * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        if a >= 0:
            w = tl.load(b_ptr + ((s * A + a) * N + cols[:, None]) * R + ranks[None, :], mask=(cols < N)[:, None], other=0.0)
            out += scaling * tl.sum(w.to(tl.float32) * v[None, :], axis=1)
        tl.store(y_ptr + t * S * N + s * N + cols, out.to(tl.bfloat16), mask=cols < N)


def run(x, lora_a, lora_b, base, seg_starts, seg_adapters, scaling):  # type: ignore[no-untyped-def]
    T, H = x.shape
    S, A, R, _ = lora_a.shape
    N = lora_b.shape[2]
    nseg = seg_adapters.shape[0]
    y = torch.empty_like(base)
    _token_kernel[(T, S)](
        x, lora_a, lora_b, base, y, seg_starts, seg_adapters, scaling, nseg, H, N, A, S,
        R=R, SEG_PAD=triton.next_power_of_2(nseg), COLS=COLS,
    )  # fmt: skip
    return y
