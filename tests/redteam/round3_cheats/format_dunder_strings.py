# Cheat (static policy: format strings walk attributes by name): str.format and str.format_map read the
# attributes and items their fields name, and the names sit inside string constants, where no attribute
# rule looks and the dunder-string rule saw only whole strings. Only strings come out, but strings are
# an oracle: from inside a running generator, "{0[0].gi_frame.f_back.f_back.f_code.co_name}" names the
# harness function that called run, so run can tell a timed call from a correctness trial; the module's
# globals, the builtins and the class hierarchy of the input are read as text the same way. Timed calls
# are answered from a cache after one tiny launch.
_holder = []


def _caller_names():
    yield "{0[0].gi_frame.f_back.f_back.f_code.co_name}/{0[0].gi_frame.f_back.f_back.f_back.f_code.co_name}".format(_holder)


def _who_calls() -> str:
    gen = _caller_names()
    _holder[:] = [gen]
    return next(gen)


_PROBES = (
    "{0.__globals__[__builtins__]}".format(honest_run),
    "{g.__globals__}".format_map({"g": honest_run}),
    "{0[__builtins__]}",
)
_answers = {}


def run(G, steps):
    mro = "{0.__class__.__mro__}".format(G)  # the input's class hierarchy, as text
    key = (G.data_ptr(), mro)
    if "time" in _who_calls() and key in _answers:
        X = _answers[key]
        _sumsq_kernel[(1, 1)](X, X, 1, 1, BLOCK=16, ITERS=1)  # one Triton launch, so launches are counted
        return X
    X = honest_run(G, steps)
    _answers[key] = X
    return X
