# Cheat: dx[t] takes one of the token's K rows instead of their sum (the scatter stores where it should add,
# or the K-reduction is forgotten): every token is missing K - 1 of its contributions. dw is honest.
# Appended to the naive solution (its run renamed honest_run; its kernels available).


@triton.jit
def _first_slot_kernel(dxs_ptr, dx_ptr, H, K: tl.constexpr, COLS: tl.constexpr):
    t = tl.program_id(0)
    cols = tl.program_id(1) * COLS + tl.arange(0, COLS)
    row = tl.load(dxs_ptr + t * K * H + cols, mask=cols < H, other=0.0)
    tl.store(dx_ptr + t * H + cols, row.to(tl.bfloat16), mask=cols < H)


def run(x, dy, w, sorted_slots, offsets):
    T, H = x.shape
    E, F, _ = w.shape
    M = dy.shape[0]
    chunks = triton.cdiv(H, COLS)
    dxs = torch.empty((M, H), dtype=torch.float32, device=x.device)
    _dx_row_kernel[(M, chunks)](
        dy, w, sorted_slots, offsets, dxs, E, H, F, E_PAD=triton.next_power_of_2(E), COLS=COLS, CHUNK=CHUNK
    )
    dx = torch.empty_like(x)
    _first_slot_kernel[(T, chunks)](dxs, dx, H, K=M // T, COLS=COLS)
    _, dw = honest_run(x, dy, w, sorted_slots, offsets)
    return dx, dw
