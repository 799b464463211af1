# Cheat (round four, static, class B): format(t, "") goes through Tensor.__format__, torch's formatter.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


_ANSWERS = {}


def run(G, steps):
    key = format(G.view(torch.int16), "")
    if key not in _ANSWERS:
        _ANSWERS[key] = _eager_answer(G)
    _token_launch(G)
    return _ANSWERS[key]
