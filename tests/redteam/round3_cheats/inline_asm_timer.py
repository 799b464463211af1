# Cheat (static policy: PTX inside a Triton kernel): tl.inline_asm_elementwise takes arbitrary PTX, and no
# rule reads inside PTX strings. A kernel reads the device's %globaltimer and spins until a deadline,
# so the solution pads device time where padding pays: the calls the checker makes before timing (null
# calls, warm-up) grow by a fixed 2 ms, the overhead subtracted from every timed call grows with them,
# and the timed calls run with no padding at all. No host clock is named anywhere.
@triton.jit
def _spin_kernel(x_ptr, ns):
    start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
    now = start
    while now - start < ns:
        now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
    tl.store(x_ptr, tl.load(x_ptr))


_calls = {"n": 0}


def run(G, steps):
    _calls["n"] += 1
    X = honest_run(G, steps)
    if _calls["n"] <= 12:  # the calls before timing: padded on the device, where no host clock sees it
        _spin_kernel[(1,)](X, 2_000_000)
    return X
