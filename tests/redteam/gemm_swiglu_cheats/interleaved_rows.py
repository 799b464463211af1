# Cheat: w read as interleaved gate/up rows (gate = even rows, up = odd rows), the layout some
# frameworks use for a fused gate_up weight, where this task stacks the halves. The naive GEMM's output
# is read with the interleaved pairing. Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _interleaved_kernel(h_ptr, y_ptr, total, inter, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    pair = (offs // inter) * 2 * inter + 2 * (offs % inter)
    g = tl.load(h_ptr + pair, mask=ok, other=0.0).to(tl.float32)
    u = tl.load(h_ptr + pair + 1, mask=ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (g * tl.sigmoid(g) * u).to(tl.bfloat16), mask=ok)


def run(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    M, K = x.shape
    n2 = w.shape[0]
    h = torch.empty((M, n2), dtype=torch.bfloat16, device=x.device)
    _matmul_kernel[(triton.cdiv(M, BLOCK), triton.cdiv(n2, BLOCK))](x, w, h, M, n2, K, BM=BLOCK, BN=BLOCK, BK=BLOCK)
    y = torch.empty((M, n2 // 2), dtype=torch.bfloat16, device=x.device)
    _interleaved_kernel[(triton.cdiv(M * n2 // 2, EW_BLOCK),)](h, y, M * n2 // 2, n2 // 2, BLOCK=EW_BLOCK)
    return y
