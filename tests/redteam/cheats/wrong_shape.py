# Wrong output shape: drops the batch dimension of single-matrix batches and flattens others.
def run(G, steps):
    return honest_run(G, steps).reshape(-1, G.shape[2])
