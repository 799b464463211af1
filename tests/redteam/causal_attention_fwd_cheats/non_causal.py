# Wrong mask: bidirectional attention. Only keys past the sequence end are masked, so query i also
# sees the later keys i+1..S-1 (right for an encoder, wrong for a causal decoder).
@triton.jit
def _non_causal_kernel(q_ptr, k_ptr, v_ptr, o_ptr, scale, S, Hq, GROUP, D: tl.constexpr, BLOCK: tl.constexpr):
    bh = tl.program_id(0)
    kv_bh = (bh // Hq) * (Hq // GROUP) + (bh % Hq) // GROUP
    offs_m = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + bh * S * D + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)
    m_i = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK], dtype=tl.float32)
    acc = tl.zeros([BLOCK, D], dtype=tl.float32)
    for start_n in range(0, S, BLOCK):
        offs_n = start_n + tl.arange(0, BLOCK)
        kv = kv_bh * S * D + offs_n[:, None] * D + offs_d[None, :]
        k = tl.load(k_ptr + kv, mask=offs_n[:, None] < S, other=0.0)
        v = tl.load(v_ptr + kv, mask=offs_n[:, None] < S, other=0.0)
        s = tl.where(offs_n[None, :] < S, tl.dot(q, tl.trans(k)) * scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    out = (acc / l_i[:, None]).to(tl.bfloat16)
    tl.store(o_ptr + bh * S * D + offs_m[:, None] * D + offs_d[None, :], out, mask=offs_m[:, None] < S)


def run(q, k, v, scale):
    B, Hq, S, D = q.shape
    o = torch.empty_like(q)
    _non_causal_kernel[(B * Hq, triton.cdiv(S, 32))](q, k, v, o, scale, S, Hq, Hq // k.shape[1], D=D, BLOCK=32)
    return o
