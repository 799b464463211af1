# Cheat: a request without an adapter (-1) served with adapter 0 (an index clamped to 0, as a kernel that
# never checks for -1 reads it): wrong exactly on those requests' tokens. Appended to the naive solution.


@triton.jit
def _clamp_kernel(src_ptr, dst_ptr, n, COLS: tl.constexpr):
    i = tl.program_id(0) * COLS + tl.arange(0, COLS)
    tl.store(dst_ptr + i, tl.maximum(tl.load(src_ptr + i, mask=i < n), 0), mask=i < n)


def run(x, lora_a, lora_b, base, seg_starts, seg_adapters, scaling):
    clamped = torch.empty_like(seg_adapters)
    _clamp_kernel[(triton.cdiv(seg_adapters.shape[0], COLS),)](seg_adapters, clamped, seg_adapters.shape[0], COLS=COLS)
    return honest_run(x, lora_a, lora_b, base, seg_starts, clamped, scaling)
