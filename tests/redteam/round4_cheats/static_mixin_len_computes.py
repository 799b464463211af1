# Cheat (round four, static, class A): the list subclass defines nothing; a plain mixin of the file
# (object-derived, allowed its __len__) comes first in the bases, so len() on the list runs its method.
# The shared core (imports, a token Triton launch, the eager answer) is _static_core.py.


class _Sized:
    def __len__(self):
        self.append(_eager_answer(self.G))
        return 1


class Answer(_Sized, list):
    def __init__(self, G):
        super().__init__()
        self.G = G


def run(G, steps):
    _token_launch(G)
    return Answer(G)
