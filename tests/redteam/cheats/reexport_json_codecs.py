# Cheat (finding: names, not objects): codecs.open reached through the json attribute of a Triton
# runtime module (triton.runtime.autotuner.json.codecs): files written with no `open` in sight.
import triton

_write = triton.runtime.autotuner.json.codecs.open
with _write("forged-by-solution.txt", "w") as _handle:
    _handle.write("written through json.codecs")


def run(G, steps):
    return honest_run(G, steps)
