# Crash: read far outside any allocation.
@triton.jit
def _wild_read_kernel(ptr, out):
    value = tl.load(ptr + 1_000_000_000_000)
    tl.store(out, value)


def run(G, steps):
    out = torch.empty((1,), dtype=torch.bfloat16, device=G.device)
    _wild_read_kernel[(1,)](G, out)
    return honest_run(G, steps)
