# Cheat (round four, static, class A): the method is not a def but a name bound in the class body
# (__len__ = _len), which the dunder-definition rule once allowed like any allowed dunder string.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


def _len(self):
    self.append(_eager_answer(self.G))
    return 1


class Answer(list):
    def __init__(self, G):
        super().__init__()
        self.G = G

    __len__ = _len


def run(G, steps):
    _token_launch(G)
    return Answer(G)
