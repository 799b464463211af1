# ignore_index disregarded: every token enters the mean (prompt tokens get a loss and a gradient, and the
# mean divides by BT instead of n_valid). The labels are replaced by a copy filled with token 0 by a kernel.
@triton.jit
def _fill_labels_kernel(out_ptr, BT, BLOCK_T: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    tl.store(out_ptr + offs, tl.zeros([BLOCK_T], dtype=tl.int64), mask=offs < BT)


def run(hs, Ws, ht, Wt, labels, beta, temperature):
    every = torch.empty_like(labels)
    _fill_labels_kernel[(triton.cdiv(labels.shape[0], 1024),)](every, labels.shape[0], BLOCK_T=1024)
    return honest_run(hs, Ws, ht, Wt, every, beta, temperature)
