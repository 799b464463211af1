# Cheat (round four, static, class B): the formatted value nested in a list comprehension, one row of an
# integer view at a time.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


_ANSWERS = {}


def run(G, steps):
    key = tuple([f"{row}" for row in G.view(torch.int16).flatten(0, 1)])
    if key not in _ANSWERS:
        _ANSWERS[key] = _eager_answer(G)
    _token_launch(G)
    return _ANSWERS[key]
