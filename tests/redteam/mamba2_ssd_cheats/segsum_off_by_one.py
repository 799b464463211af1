# Cheat: the segment sum off by one step: the decay from step s to step l taken as exp(c_l - c_{s-1})
# (the cumulative sum including step s) where it is exp(c_l - c_s), so every input is also decayed by its
# own step: S_t = a_t (S_{t-1} + dt_t x_t^T B_t). The naive scan with dt exp(dt A) as the input's weight.
# Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _own_decay_kernel(dt_ptr, decay_ptr, weight_ptr, total, ELEMS: tl.constexpr):
    i = tl.program_id(0) * ELEMS + tl.arange(0, ELEMS)
    ok = i < total
    tl.store(weight_ptr + i, tl.load(dt_ptr + i, mask=ok) * tl.load(decay_ptr + i, mask=ok), mask=ok)


def run(x, dt, A, Bm, Cm, D):
    batch, _, H, P = x.shape
    decay = decays(dt, A)
    weight = torch.empty_like(dt)
    _own_decay_kernel[(triton.cdiv(dt.numel(), ELEMS),)](dt, decay, weight, dt.numel(), ELEMS=ELEMS)
    y = torch.empty_like(x)
    state = torch.empty((batch, H, P, Bm.shape[3]), dtype=torch.float32, device=x.device)
    scan(x, weight, decay, Bm, Cm, D, y, state)
    return y, state
