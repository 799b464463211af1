# Cheat: a chunked kernel that applies the decay only between chunks: the state entering a chunk of 16 is
# decayed by the chunk's whole exp(sum g), and nothing decays inside the chunk (the intra-chunk exp(G_i - G_j)
# and exp(G) factors dropped). The honest recurrence run with each chunk's total log decay on its first token
# and 0 on the others. Appended to the naive solution (its run renamed honest_run).

CHUNK = 16


@triton.jit
def _lump_kernel(g_ptr, g_out_ptr, T, CHUNK: tl.constexpr):
    bh = tl.program_id(1)
    rows = tl.program_id(0) * CHUNK + tl.arange(0, CHUNK)
    ok = rows < T
    g = tl.load(g_ptr + bh * T + rows, mask=ok, other=0.0)
    total = tl.sum(g, axis=0)
    tl.store(g_out_ptr + bh * T + rows, tl.where(rows % CHUNK == 0, total, 0.0), mask=ok)


def run(q, k, v, g, beta):
    B, H, T, _ = q.shape
    lumped = torch.empty_like(g)
    _lump_kernel[(triton.cdiv(T, CHUNK), B * H)](g, lumped, T, CHUNK=CHUNK)
    return honest_run(q, k, v, g=lumped, beta=beta)
