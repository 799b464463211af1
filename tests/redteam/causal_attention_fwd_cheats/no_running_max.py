# Wrong softmax: p = exp(s) without subtracting a (running) row maximum, l = sum p, o = (p @ v) / l.
# Exact in real arithmetic and fine while the scores stay below ~88 (every fresh input: at most ~30),
# but exp overflows float32 on the call with q, k, v x4 (scores x16, up to several hundred): inf / inf.
@triton.jit
def _no_max_kernel(q_ptr, k_ptr, v_ptr, o_ptr, scale, S, Hq, GROUP, D: tl.constexpr, BLOCK: tl.constexpr):
    bh = tl.program_id(0)
    kv_bh = (bh // Hq) * (Hq // GROUP) + (bh % Hq) // GROUP
    offs_m = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + bh * S * D + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)
    l_i = tl.zeros([BLOCK], dtype=tl.float32)
    acc = tl.zeros([BLOCK, D], dtype=tl.float32)
    for start_n in range(0, S, BLOCK):
        offs_n = start_n + tl.arange(0, BLOCK)
        kv = kv_bh * S * D + offs_n[:, None] * D + offs_d[None, :]
        k = tl.load(k_ptr + kv, mask=offs_n[:, None] < S, other=0.0)
        v = tl.load(v_ptr + kv, mask=offs_n[:, None] < S, other=0.0)
        visible = (offs_n[None, :] <= offs_m[:, None]) & (offs_n[None, :] < S)
        p = tl.where(visible, tl.exp(tl.dot(q, tl.trans(k)) * scale), 0.0)
        l_i += tl.sum(p, axis=1)
        acc += tl.dot(p.to(tl.bfloat16), v)
    out = (acc / l_i[:, None]).to(tl.bfloat16)
    tl.store(o_ptr + bh * S * D + offs_m[:, None] * D + offs_d[None, :], out, mask=offs_m[:, None] < S)


def run(q, k, v, scale):
    B, Hq, S, D = q.shape
    o = torch.empty_like(q)
    _no_max_kernel[(B * Hq, triton.cdiv(S, 32))](q, k, v, o, scale, S, Hq, Hq // k.shape[1], D=D, BLOCK=32)
    return o
