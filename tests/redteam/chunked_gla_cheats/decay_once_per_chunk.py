# Cheat: the decay applied once per chunk instead of per step: at each chunk's start the carried state is
# multiplied by the chunk's whole decay exp(g_c0 + ... + g_c1-1), and within the chunk the keys and values
# are added undecayed (a chunked kernel that drops the intra-chunk decay mask and the per-step factors,
# keeping only the chunk's total). Appended to the naive solution (its run renamed honest_run; its gla
# helper available).

@triton.jit
def _chunk_decay_kernel(q_ptr, k_ptr, v_ptr, g_ptr, o_ptr, state_ptr, T, scale, D: tl.constexpr, CHUNK: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    base = bh * T * D
    d = tl.arange(0, D)
    c = tl.arange(0, CHUNK)
    state = tl.zeros([D, D], dtype=tl.float32)
    for t in range(0, T):
        if t % CHUNK == 0:
            chunk_g = tl.load(g_ptr + bh * T + t + c, mask=t + c < T, other=0.0)
            state = state * tl.exp(tl.sum(chunk_g, axis=0))
        q = tl.load(q_ptr + base + t * D + d).to(tl.float32)
        k = tl.load(k_ptr + base + t * D + d).to(tl.float32)
        v = tl.load(v_ptr + base + t * D + d).to(tl.float32)
        state = state + k[:, None] * v[None, :]
        tl.store(o_ptr + base + t * D + d, (tl.sum(q[:, None] * state, axis=0) * scale).to(tl.bfloat16))
    tl.store(state_ptr + bh * D * D + d[:, None] * D + d[None, :], state)


def run(q, k, v, g):
    return gla(q, k, v, g, _chunk_decay_kernel, CHUNK=16)
