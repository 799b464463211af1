# Allocates without bound.
def run(G, steps):
    hoard = []
    while True:
        block = torch.empty((1 << 28,), dtype=torch.float32, device=G.device)
        _sumsq_kernel[(1, 1)](block, block, 1, 1, BLOCK=16, ITERS=1)
        hoard.append(block)
