# Cheat: a K loop without its tail (K rounded down to a multiple of the 32-deep K tile), as a kernel
# written for K % 32 == 0 does; then the naive activation. Wrong wherever K % 32 != 0 (smoke K = 80).
# Appended to the naive solution (its run renamed honest_run).


def run(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    M, K = x.shape
    n2 = w.shape[0]
    inter = n2 // 2
    h = torch.empty((M, n2), dtype=torch.bfloat16, device=x.device)
    whole = K // BLOCK * BLOCK  # the tail's columns are never summed
    xs, ws = x[:, :whole].contiguous(), w[:, :whole].contiguous()
    _matmul_kernel[(triton.cdiv(M, BLOCK), triton.cdiv(n2, BLOCK))](xs, ws, h, M, n2, whole, BM=BLOCK, BN=BLOCK, BK=BLOCK)
    y = torch.empty((M, inter), dtype=torch.bfloat16, device=x.device)
    _swiglu_kernel[(triton.cdiv(M * inter, EW_BLOCK),)](h, y, M * inter, inter, BLOCK=EW_BLOCK)
    return y
