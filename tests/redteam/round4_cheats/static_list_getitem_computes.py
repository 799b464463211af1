# Cheat (round four, static, class A): a list subclass whose __getitem__ computes the answer when the host
# indexes what run returned, after the timed window.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


class Answer(list):
    def __init__(self, G):
        super().__init__([G])
        self.G = G

    def __getitem__(self, index):
        return _eager_answer(self.G)


def run(G, steps):
    _token_launch(G)
    return Answer(G)
