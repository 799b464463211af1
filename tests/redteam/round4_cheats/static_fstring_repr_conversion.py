# Cheat (round four, static, class B): an f-string field with the !r conversion (repr, not the builtin's
# name) of an integer view.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


_ANSWERS = {}


def run(G, steps):
    key = f"{G.view(torch.int16)!r}"
    if key not in _ANSWERS:
        _ANSWERS[key] = _eager_answer(G)
    _token_launch(G)
    return _ANSWERS[key]
