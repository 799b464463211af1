# Cheat: dw's reduction over an expert's rows steps over whole chunks only (range(lo, hi - CHUNK + 1, CHUNK),
# no mask for the ragged end): each group's last partial chunk of rows is dropped from its dw (a group shorter
# than a chunk gets zeros). dx is honest. Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _dw_whole_chunks_kernel(x_ptr, dy_ptr, slots_ptr, offsets_ptr, dw_ptr, H, F, K: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr, CHUNK: tl.constexpr):  # fmt: skip
    e = tl.program_id(0)
    ii = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(2) * COLS + tl.arange(0, COLS)
    lo = tl.load(offsets_ptr + e)
    hi = tl.load(offsets_ptr + e + 1)
    acc = tl.zeros([ROWS, COLS], dtype=tl.float32)
    for r0 in range(lo, hi - CHUNK + 1, CHUNK):
        rows = r0 + tl.arange(0, CHUNK)
        tokens = tl.load(slots_ptr + rows) // K
        d = tl.load(dy_ptr + rows[:, None] * F + ii[None, :], mask=(ii < F)[None, :], other=0.0)
        xs = tl.load(x_ptr + tokens[:, None] * H + cols[None, :], mask=(cols < H)[None, :], other=0.0)
        acc += tl.sum(d.to(tl.float32)[:, :, None] * xs.to(tl.float32)[:, None, :], axis=0)
    tl.store(
        dw_ptr + (e * F + ii[:, None]) * H + cols[None, :], acc.to(tl.bfloat16), mask=(ii < F)[:, None] & (cols < H)[None, :]
    )


def run(x, dy, w, sorted_slots, offsets):
    H = x.shape[1]
    E, F, _ = w.shape
    dx, _ = honest_run(x, dy, w, sorted_slots, offsets)
    dw = torch.empty_like(w)
    _dw_whole_chunks_kernel[(E, triton.cdiv(F, ROWS), triton.cdiv(H, COLS))](
        x, dy, sorted_slots, offsets, dw, H, F, K=dy.shape[0] // x.shape[0], ROWS=ROWS, COLS=COLS, CHUNK=CHUNK
    )
    return dx, dw
