# Cheat: the dW term of some rows is dropped. The dW product runs over BT // 16 * 16 tokens, as a kernel that
# steps over the tokens in 16-row tiles without a mask does: the last BT % 16 tokens add nothing to dW (loss
# and dh stay honest). The registered BT are multiples of 16; the smoke workloads (BT 40 and 24) lose 8
# tokens, a fifth and a third of them. Appended to the naive solution (its run renamed honest_run).


def run(h, W, targets):
    z = logits(h, W)
    count = count_kept(targets)
    row_loss = softmax_grad(z, targets, count)
    dh, dW = products(z, h, W, h.shape[0] // 16 * 16)
    return mean_loss(row_loss, count), dh, dW
