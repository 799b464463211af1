# Cheat: the log-sum-exp accumulated in bfloat16. The row kernel keeps its online state (the running max and
# the running sum of exp(z - max)) in bfloat16, the dtype of h, rounding it after every 64-wide step. Each step
# adds a relative rounding error of up to 2^-9; once the running sum is more than ~256 times a step's
# contribution, later steps are rounded away. At the registered vocabularies (2000-4000 steps) the loss is
# 3-5% low and dh 10-20% off; on the smoke vocabularies (3-4 steps) the error stays within the bound (0.35 of
# it), so the red-team test runs it at V = 4096 (64 steps), where it fails. Appended to the naive solution.


@triton.jit
def _bf16_state_row_kernel(z_ptr, t_ptr, count_ptr, row_loss_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    line = z_ptr + row.to(tl.int64) * V  # the naive _row_kernel with a bfloat16 online state
    m = tl.full((), float("-inf"), dtype=tl.bfloat16)
    s = tl.zeros((), dtype=tl.bfloat16)
    for v0 in range(0, V, BLOCK):
        v = v0 + tl.arange(0, BLOCK)
        z = tl.load(line + v, mask=v < V, other=float("-inf"))
        m_new = tl.maximum(m.to(tl.float32), tl.max(z, axis=0)).to(tl.bfloat16)
        grown = s.to(tl.float32) * tl.exp(m.to(tl.float32) - m_new.to(tl.float32))
        s = (grown + tl.sum(tl.exp(z - m_new.to(tl.float32)), axis=0)).to(tl.bfloat16)
        m = m_new
    lse = m.to(tl.float32) + tl.log(s.to(tl.float32))
    t = tl.load(t_ptr + row)
    kept = t != -100
    zt = tl.load(line + tl.where(kept, t, 0))
    tl.store(row_loss_ptr + row, tl.where(kept, lse - zt, 0.0))
    scale = tl.where(kept, 1.0 / tl.load(count_ptr), 0.0)
    for v0 in range(0, V, BLOCK):
        v = v0 + tl.arange(0, BLOCK)
        z = tl.load(line + v, mask=v < V, other=0.0)
        tl.store(line + v, (tl.exp(z - lse) - tl.where(v == t, 1.0, 0.0)) * scale, mask=v < V)


def run(h, W, targets):
    z = logits(h, W)
    count = count_kept(targets)
    row_loss = torch.empty((z.shape[0],), dtype=torch.float32, device=z.device)
    _bf16_state_row_kernel[(z.shape[0],)](z, targets, count, row_loss, z.shape[1], BLOCK=ROW_BLOCK)
    dh, dW = products(z, h, W, h.shape[0])
    return mean_loss(row_loss, count), dh, dW
