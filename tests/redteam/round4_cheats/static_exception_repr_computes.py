# Cheat (round four, static, class A, the error path): an exception whose __repr__ runs eager torch when
# the host formats the error after the window (here: fills a cache that the next calls answer from).
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


_ANSWERS = {}


class Boom(RuntimeError):
    def __init__(self, G):
        super().__init__("retry")
        self.G = G

    def __repr__(self):
        _ANSWERS[self.G.data_ptr()] = _eager_answer(self.G)
        return "Boom('retry')"


def run(G, steps):
    _token_launch(G)
    if G.data_ptr() in _ANSWERS:
        return _ANSWERS[G.data_ptr()]
    raise Boom(G)
