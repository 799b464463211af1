# Hang: never returns.
def run(G, steps):
    honest_run(G, steps)
    while True:
        pass
