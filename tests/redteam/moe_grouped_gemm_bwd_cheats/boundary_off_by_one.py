# Cheat: every group boundary read one row late (rows offsets[e] + 1 .. offsets[e + 1], a classic off-by-one
# in a kernel's group search): each expert's first row is served by the expert before it, in dx (the wrong
# w) and in dw (a row lost here, a foreign row there). Appended to the naive solution (its run renamed
# honest_run).


@triton.jit
def _late_bounds_kernel(src_ptr, dst_ptr, E, M, E_PAD: tl.constexpr):
    e = tl.arange(0, E_PAD)
    bound = tl.load(src_ptr + e, mask=e <= E, other=0)
    late = tl.where((e > 0) & (e < E), tl.minimum(bound + 1, M), bound)
    tl.store(dst_ptr + e, late, mask=e <= E)


def run(x, dy, w, sorted_slots, offsets):
    E = w.shape[0]
    late = torch.empty_like(offsets)
    _late_bounds_kernel[(1,)](offsets, late, E, dy.shape[0], E_PAD=triton.next_power_of_2(E + 1))
    return honest_run(x, dy, w, sorted_slots, late)
