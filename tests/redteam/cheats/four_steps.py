# Wrong algorithm: only the first four coefficient triples (the honest core loops over COEFFS).
COEFFS = COEFFS[:4]


def run(G, steps):
    if steps != 5:
        raise ValueError("steps must be 5")
    return honest_run(G, 4)
