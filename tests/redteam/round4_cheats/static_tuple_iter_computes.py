# Cheat (round four, static, class A): a tuple subclass whose __iter__ computes the answer when the host
# unpacks what run returned, after the timed window.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


class Answer(tuple):
    def __init__(self, items):
        super().__init__()
        self.G = items[0]

    def __iter__(self):
        yield _eager_answer(self.G)


def run(G, steps):
    _token_launch(G)
    return Answer((G,))
