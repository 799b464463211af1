# Cheat: the SiLU applied to the up half of w13's output and multiplied by the gate half (the halves swapped:
# a [w3; w1] checkpoint read as [w1; w3]). The naive solution run on w13 with its halves exchanged by a copy
# kernel. Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _swap_halves_kernel(src_ptr, dst_ptr, I, H, COLS: tl.constexpr):
    row = tl.program_id(0)  # a row of w13 viewed as [E * 2 I, H]
    within = row % (2 * I)
    src_row = row - within + (within + I) % (2 * I)
    for h0 in range(0, H, COLS):
        cols = h0 + tl.arange(0, COLS)
        tl.store(dst_ptr + row * H + cols, tl.load(src_ptr + src_row * H + cols, mask=cols < H), mask=cols < H)


def run(hidden, router_logits, w13, w2, top_k):
    E, two_i, H = w13.shape
    swapped = torch.empty_like(w13)
    _swap_halves_kernel[(E * two_i,)](w13, swapped, two_i // 2, H, COLS=COLS)
    return honest_run(hidden, router_logits, swapped, w2, top_k)
