# Cheat (round four, static, class A): a NamedTuple (a tuple to the host) whose __len__ computes the
# answer after the window; the NamedTuple base looked like a plain record.
from typing import NamedTuple

# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


class Answer(NamedTuple):
    G: object

    def __len__(self):
        _eager_answer(self.G)
        return 1


def run(G, steps):
    _token_launch(G)
    return Answer(G)
