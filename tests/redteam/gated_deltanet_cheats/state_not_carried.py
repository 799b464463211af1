# Cheat: a chunked kernel that never passes the state from one chunk to the next (every chunk starts from
# zero, as if the state kernel's loop reset it). The honest recurrence run with the decay made total
# (alpha = exp(-inf) = 0) at the first token of every chunk of 16. Appended to the naive solution.

CHUNK = 16


@triton.jit
def _reset_kernel(g_ptr, g_out_ptr, n, T, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    g = tl.load(g_ptr + i, mask=ok, other=0.0)
    tl.store(g_out_ptr + i, tl.where((i % T) % CHUNK == 0, float("-inf"), g), mask=ok)


def run(q, k, v, g, beta):
    reset = torch.empty_like(g)
    _reset_kernel[(triton.cdiv(g.numel(), 64),)](g, reset, g.numel(), g.shape[-1], CHUNK=CHUNK, BLOCK=64)
    return honest_run(q, k, v, reset, beta)
