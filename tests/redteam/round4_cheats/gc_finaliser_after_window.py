# Cheat (round four, class 1 through the collector): a suspended generator in a reference cycle computes
# the answer in its finally block when the cyclic collector frees it, which on the old host happened at a
# collection after the window (outside the op recorder); only a padding launch ran in the window.
def _later(G, out):
    try:
        yield
    finally:
        out.copy_(torch_muon(G))


def run(G, steps):
    out = torch.empty_like(G)
    honest_run(G[:1].clone(), steps)
    pending = _later(G, out)
    next(pending)
    loop = [pending]
    loop.append(loop)  # freed by the collector, not by this frame
    return out
