# Contract broken: ignores the steps argument instead of rejecting values other than 5.
def run(G, steps):
    return honest_run(G, 5)
