# Cheat (round four, class 2): the other routes from tensor values to Python that torch takes without an
# aten op: tolist, the storage, pickling through copy, repr, format; each tried, each failure swallowed.
import copy


def run(G, steps):
    reads = (
        lambda: G.tolist(),
        lambda: G.untyped_storage()[0],
        lambda: copy.copy(G.reshape(-1)[:4]).__reduce_ex__(2),
        lambda: repr(G[0]),
        lambda: format(G[0, 0], ""),
        lambda: str(G[0]),
    )
    for read in reads:
        try:
            read()
        except Exception:
            pass
    return honest_run(G, steps)
