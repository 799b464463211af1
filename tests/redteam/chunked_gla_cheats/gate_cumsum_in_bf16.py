# Cheat: the chunk-local cumulative gate G (the running sum of g over a chunk of CHUNK = 64 steps, the reference's chunk) kept in
# bfloat16, as a kernel that loads g in q's dtype and runs tl.cumsum on it gets it. Written as the
# recurrence whose step decays are exp(G_t - G_{t-1}) of the rounded running sums: the same products as the
# chunked form with the bfloat16 G (exp(G_i - G_j) telescopes). Appended to the naive solution (its run
# renamed honest_run; its gla helper available).

@triton.jit
def _bf16_cumsum_kernel(q_ptr, k_ptr, v_ptr, g_ptr, o_ptr, state_ptr, T, scale, D: tl.constexpr, CHUNK: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    base = bh * T * D
    d = tl.arange(0, D)
    state = tl.zeros([D, D], dtype=tl.float32)
    running = tl.zeros([1], dtype=tl.bfloat16)
    for t in range(0, T):
        if t % CHUNK == 0:
            running = tl.zeros([1], dtype=tl.bfloat16)
        step = tl.load(g_ptr + bh * T + t + tl.zeros([1], dtype=tl.int32)).to(tl.bfloat16)
        after = (running.to(tl.float32) + step.to(tl.float32)).to(tl.bfloat16)
        decay = tl.sum(tl.exp(after.to(tl.float32) - running.to(tl.float32)), axis=0)
        running = after
        q = tl.load(q_ptr + base + t * D + d).to(tl.float32)
        k = tl.load(k_ptr + base + t * D + d).to(tl.float32)
        v = tl.load(v_ptr + base + t * D + d).to(tl.float32)
        state = state * decay + k[:, None] * v[None, :]
        tl.store(o_ptr + base + t * D + d, (tl.sum(q[:, None] * state, axis=0) * scale).to(tl.bfloat16))
    tl.store(state_ptr + bh * D * D + d[:, None] * D + d[None, :], state)


def run(q, k, v, g):
    return gla(q, k, v, g, _bf16_cumsum_kernel, CHUNK=64)
