# Cheat (finding 2, recognisable timed calls): honest on the correctness trials, then an answer cache
# keyed on the input buffer's address. The old timing loop reused three buffers with unchanged values,
# so every timed call after the first on each buffer was answered from the cache, at the cost of one
# tiny Triton launch (the guard counts launches in this process).
@triton.jit
def _touch(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr))


_seen = {"calls": 0}
_answers = {}


def run(G, steps):
    _seen["calls"] += 1
    key = G.data_ptr()
    if key in _answers:
        X = _answers[key]
        _touch[(1,)](X)
        return X
    X = honest_run(G, steps)
    if _seen["calls"] > 12:  # past the correctness trials of the first workload
        _answers[key] = X
    return X
