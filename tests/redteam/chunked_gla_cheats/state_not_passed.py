# Cheat: every chunk of CHUNK = 16 steps starts from a zero state (the state is not carried from one chunk to
# the next: a chunked kernel whose chunks run as independent programs with no state passing). Appended to
# the naive solution (its run renamed honest_run; its gla helper available).


@triton.jit
def _chunks_from_zero_kernel(q_ptr, k_ptr, v_ptr, g_ptr, o_ptr, state_ptr, T, scale, D: tl.constexpr, CHUNK: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    base = bh * T * D
    d = tl.arange(0, D)
    state = tl.zeros([D, D], dtype=tl.float32)
    for t in range(0, T):
        if t % CHUNK == 0:
            state = tl.zeros([D, D], dtype=tl.float32)
        q = tl.load(q_ptr + base + t * D + d).to(tl.float32)
        k = tl.load(k_ptr + base + t * D + d).to(tl.float32)
        v = tl.load(v_ptr + base + t * D + d).to(tl.float32)
        state = state * tl.exp(tl.load(g_ptr + bh * T + t)) + k[:, None] * v[None, :]
        tl.store(o_ptr + base + t * D + d, (tl.sum(q[:, None] * state, axis=0) * scale).to(tl.bfloat16))
    tl.store(state_ptr + bh * D * D + d[:, None] * D + d[None, :], state)


def run(q, k, v, g):
    return gla(q, k, v, g, _chunks_from_zero_kernel, CHUNK=16)
