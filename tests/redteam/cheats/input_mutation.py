# Cheat: use the input buffer as scratch (writes into G).
def run(G, steps):
    out = honest_run(G, steps)
    _scribble_kernel[(1,)](G)
    return out


@triton.jit
def _scribble_kernel(g_ptr):
    tl.store(g_ptr + tl.arange(0, 16), tl.zeros([16], dtype=tl.bfloat16))
