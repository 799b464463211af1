# Honest: the solution's own objects may use names that library objects have too: a plan class with
# private fields (self._block_m) and methods of its own named item and compile.
class _Plan:
    def __init__(self, block_m):
        self._block_m = block_m
        self._warps = 4

    def item(self):
        return self._block_m

    def compile(self):
        return self._block_m * self._warps


_PLAN = _Plan(64)


def run(G, steps):
    if _PLAN.item() != 64 or _PLAN.compile() != 256:
        raise ValueError("the plan changed")
    return honest_run(G, steps)
