# Cheat (round four, static, class B): "{}".format(t) of an integer view; the format string reads no
# attribute, so the format-field rule has nothing to say.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


_ANSWERS = {}


def run(G, steps):
    key = "{}".format(G.view(torch.int16))
    if key not in _ANSWERS:
        _ANSWERS[key] = _eager_answer(G)
    _token_launch(G)
    return _ANSWERS[key]
