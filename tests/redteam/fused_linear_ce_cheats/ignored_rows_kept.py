# Cheat: no ignore_index handling. The targets are clamped to [0, V) (a kernel that only guards its gather
# index), so every ignored token counts as a token whose target is id 0: its loss term joins the mean, the
# mean divides by all BT tokens, and its row of dh and its share of dW are nonzero. About a third of the
# tokens are ignored in every call (inputs.py), so all three outputs are far off. Appended to the naive
# solution (its run renamed honest_run).


@triton.jit
def _clamp_kernel(t_ptr, out_ptr, BT, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    t = tl.load(t_ptr + rows, mask=rows < BT, other=0)
    tl.store(out_ptr + rows, tl.maximum(t, 0), mask=rows < BT)


def run(h, W, targets):
    clamped = torch.empty_like(targets)
    _clamp_kernel[(triton.cdiv(targets.shape[0], SUM_BLOCK),)](targets, clamped, targets.shape[0], BLOCK=SUM_BLOCK)
    return honest_run(h, W, clamped)
