# Cheat (finding: names, not objects): Triton's cache manager re-exported outside
# triton.runtime.cache (by triton.runtime.autotuner): files in Triton's on-disk cache, read or written.
from triton.runtime.autotuner import get_cache_manager

_cache = get_cache_manager("d2c" + "0" * 61)  # a hex key, like a kernel hash
_cache.put("forged", "by-solution.txt", binary=False)


def run(G, steps):
    return honest_run(G, steps)
