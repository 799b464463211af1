# Cheat: the wrong mean denominator. Ignored tokens are left out of the sum and get a zero gradient, but the
# mean divides by all BT tokens instead of the n kept ones (reduction="sum" / BT): the loss, dh and dW are all
# scaled by n / BT, about 0.7 (never above 0.95: every document of inputs.py masks a prompt). Appended to the
# naive solution (its run renamed honest_run).


@triton.jit
def _fill_kernel(out_ptr, value):
    tl.store(out_ptr, value)


def run(h, W, targets):
    BT = targets.shape[0]
    z = logits(h, W)
    everyone = torch.empty((1,), dtype=torch.float32, device=h.device)
    _fill_kernel[(1,)](everyone, float(BT))
    row_loss = softmax_grad(z, targets, everyone)
    dh, dW = products(z, h, W, BT)
    return mean_loss(row_loss, everyone), dh, dW
