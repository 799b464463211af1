# Honest: a parameter named `input` (a builtin's name, but not the builtin here).
def _orthogonalize(input, steps):
    return honest_run(input, steps)


def run(G, steps):
    return _orthogonalize(G, steps)
