# Cheat: only part of the vocabulary is read. The kernels are written for V a multiple of 64 and loop over
# V // 64 blocks: the last V % 64 entries never enter the log-sum-exp, their logits get no gradient and their
# rows of dW are left at zero. The registered vocabularies are multiples of 64 (and of 128), so only the smoke
# workloads (V 200 and 170) show it: 8 and 42 entries are missing. Appended to the
# naive solution (its run renamed honest_run).


@triton.jit
def _zero_rows_kernel(out_ptr, first, numel, BLOCK: tl.constexpr):
    offs = first + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.bfloat16), mask=offs < numel)


def run(h, W, targets):
    V, D = W.shape
    seen = V // 64 * 64
    z = logits(h, W)
    count = count_kept(targets)
    row_loss = torch.empty((h.shape[0],), dtype=torch.float32, device=h.device)
    _row_kernel[(h.shape[0],)](z, targets, count, row_loss, seen, V, BLOCK=ROW_BLOCK)  # lse and G over `seen`
    dh = matmul(z, W, torch.empty_like(h), seen)
    dW = torch.empty_like(W)
    matmul(z.t(), h, dW[:seen], h.shape[0])
    _zero_rows_kernel[(triton.cdiv((V - seen) * D, SUM_BLOCK),)](dW, seen * D, V * D, BLOCK=SUM_BLOCK)
    return mean_loss(row_loss, count), dh, dW
