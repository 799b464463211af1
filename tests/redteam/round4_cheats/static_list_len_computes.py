# Cheat (round four, static, class A): run returns a list subclass whose __len__ computes the answer in
# eager torch the first time the host asks for its length, after the timed window has closed (no op
# recorder, the end event already recorded). Inside the window there is one token Triton launch.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


class Answer(list):
    def __init__(self, G):
        super().__init__()
        self.G = G
        self.computed = False

    def __len__(self):
        if not self.computed:
            self.append(_eager_answer(self.G))
            self.computed = True
        return 1


def run(G, steps):
    _token_launch(G)
    return Answer(G)
