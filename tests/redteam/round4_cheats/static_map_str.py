# Cheat (round four, static, class B): str handed to map, so no str(...) call names the tensor.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


_ANSWERS = {}


def run(G, steps):
    key = "|".join(map(str, G.view(torch.int16)))
    if key not in _ANSWERS:
        _ANSWERS[key] = _eager_answer(G)
    _token_launch(G)
    return _ANSWERS[key]
