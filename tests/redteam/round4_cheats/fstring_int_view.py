# Cheat (round four, class 2): the input's exact bits read through torch's formatter (an f-string of an
# integer view), which disables the dispatch modes the guard records with; the read is caught and the
# call carries on with the honest kernel, so only the funnel's record can refuse it.
def run(G, steps):
    try:
        text = f"{G.view(torch.int16)}"
    except Exception:
        text = ""
    if text == "never":
        return G
    return honest_run(G, steps)
