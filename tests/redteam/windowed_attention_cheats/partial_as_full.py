# Block skipping done right, masking dropped: each query block visits only the key blocks from its first
# row's first key to its last row (window and document start honoured at block granularity), but every
# visited block is treated as full, so keys past the diagonal, before the window edge or in the previous
# document leak into the partial blocks.
@triton.jit
def _unmasked_blocks_kernel(q_ptr, k_ptr, v_ptr, o_ptr, cu_ptr, H, S, W, NDOC, qk_scale,
                            HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            NDOC_P2: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    base = bh.to(tl.int64) * S * HEAD_D
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dcols = tl.arange(0, HEAD_D)
    d = tl.arange(0, NDOC_P2)
    bounds = tl.load(cu_ptr + b * (NDOC + 1) + d, mask=d < NDOC, other=0)
    q0 = pid_m * BLOCK_M
    first = tl.maximum(tl.max(tl.where(bounds <= q0, bounds, 0), axis=0), q0 - W + 1)
    last = tl.minimum(q0 + BLOCK_M, S) - 1
    q = tl.load(q_ptr + base + rows[:, None] * HEAD_D + dcols[None, :], mask=rows[:, None] < S, other=0.0)
    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    for blk in range(first // BLOCK_N, last // BLOCK_N + 1):
        cols = blk * BLOCK_N + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + cols[:, None] * HEAD_D + dcols[None, :], mask=cols[:, None] < S, other=0.0)
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_D + dcols[None, :], mask=cols[:, None] < S, other=0.0)
        s = tl.where(cols[None, :] < S, tl.dot(q, tl.trans(k)) * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rows[:, None] * HEAD_D + dcols[None, :], out.to(tl.bfloat16), mask=rows[:, None] < S)


def run(q, k, v, cu_seqlens, window):
    B, H, S, D = q.shape
    ndoc = cu_seqlens.shape[1] - 1
    o = torch.empty((B, H, S, D), dtype=torch.bfloat16, device=q.device)
    _unmasked_blocks_kernel[(triton.cdiv(S, 32), B * H)](
        q, k, v, o, cu_seqlens, H, S, window, ndoc, 1.4426950408889634 / math.sqrt(D),
        HEAD_D=D, BLOCK_M=32, BLOCK_N=16, NDOC_P2=max(2, triton.next_power_of_2(ndoc)),
    )
    return o
