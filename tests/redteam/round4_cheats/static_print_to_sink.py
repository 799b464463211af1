# Cheat (round four, static, class B): print() to a file-like object of the file's own: the text of an
# integer view lands in a Python string without any formatting expression in sight.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


class _Sink:
    def __init__(self):
        self.text = []

    def write(self, text):
        self.text.append(text)

    def flush(self):
        pass


_ANSWERS = {}


def run(G, steps):
    sink = _Sink()
    print(G.view(torch.int16), file=sink)
    key = "".join(sink.text)
    if key not in _ANSWERS:
        _ANSWERS[key] = _eager_answer(G)
    _token_launch(G)
    return _ANSWERS[key]
