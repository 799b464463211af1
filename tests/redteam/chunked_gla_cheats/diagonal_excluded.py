# Cheat: the intra-chunk mask is strictly causal (j < i), so step t reads the state before its own key and
# value are added: o_t = scale q_t exp(g_t) S_{t-1} instead of scale q_t S_t (the recurrence's update and
# read in the wrong order). The final state is right. Appended to the naive solution (its run renamed
# honest_run; its gla helper available).


@triton.jit
def _read_before_write_kernel(q_ptr, k_ptr, v_ptr, g_ptr, o_ptr, state_ptr, T, scale, D: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    base = bh * T * D
    d = tl.arange(0, D)
    state = tl.zeros([D, D], dtype=tl.float32)
    for t in range(0, T):
        q = tl.load(q_ptr + base + t * D + d).to(tl.float32)
        k = tl.load(k_ptr + base + t * D + d).to(tl.float32)
        v = tl.load(v_ptr + base + t * D + d).to(tl.float32)
        state = state * tl.exp(tl.load(g_ptr + bh * T + t))
        tl.store(o_ptr + base + t * D + d, (tl.sum(q[:, None] * state, axis=0) * scale).to(tl.bfloat16))
        state = state + k[:, None] * v[None, :]
    tl.store(state_ptr + bh * D * D + d[:, None] * D + d[None, :], state)


def run(q, k, v, g):
    return gla(q, k, v, g, _read_before_write_kernel)
