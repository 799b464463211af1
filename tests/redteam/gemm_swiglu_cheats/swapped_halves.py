# Cheat: the gate and up halves swapped (silu(u) * g): the naive GEMM, then an activation kernel that
# reads its operands the wrong way round. Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _swapped_kernel(h_ptr, y_ptr, total, inter, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    base = (offs // inter) * 2 * inter + offs % inter
    up = tl.load(h_ptr + base, mask=ok, other=0.0).to(tl.float32)  # the gate, taken for the up projection
    gate = tl.load(h_ptr + base + inter, mask=ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (gate * tl.sigmoid(gate) * up).to(tl.bfloat16), mask=ok)


def run(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    M, K = x.shape
    inter = w.shape[0] // 2
    h = torch.empty((M, 2 * inter), dtype=torch.bfloat16, device=x.device)
    _matmul_kernel[(triton.cdiv(M, BLOCK), triton.cdiv(2 * inter, BLOCK))](x, w, h, M, 2 * inter, K, BM=BLOCK, BN=BLOCK, BK=BLOCK)
    y = torch.empty((M, inter), dtype=torch.bfloat16, device=x.device)
    _swapped_kernel[(triton.cdiv(M * inter, EW_BLOCK),)](h, y, M * inter, inter, BLOCK=EW_BLOCK)
    return y
