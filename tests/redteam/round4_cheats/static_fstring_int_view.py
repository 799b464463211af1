# Cheat (round four, static, class B): the input's exact bits read through torch's formatter (an f-string
# of an integer view), which runs with the runtime guard's recording off; the text keys a cache of answers.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


_ANSWERS = {}


def run(G, steps):
    text = f"{G.view(torch.int32)}"
    if text in _ANSWERS:
        _token_launch(G)
        return _ANSWERS[text]
    _ANSWERS[text] = _eager_answer(G)
    return _ANSWERS[text]
