# Cheat: split-K over fixed 64-deep K splits counted with a floor division (K // 64), as a kernel written for
# K % 64 == 0 does: the last, partial split is never computed. Each split's fp32 partial comes from the naive
# tile kernel on a K slice; the partials are summed in order and rounded once. Wrong wherever K % 64 != 0
# (smoke K = 200: 8 columns of 200 are missing). Appended to the naive solution (its run renamed honest_run).

SPLIT_DEPTH = 64


@triton.jit
def _sum_splits_kernel(part_ptr, c_ptr, MN, SPLITS, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < MN
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for split in range(SPLITS):
        acc += tl.load(part_ptr + split * MN + offs, mask=ok, other=0.0)
    tl.store(c_ptr + offs, acc.to(tl.bfloat16), mask=ok)


def run(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = w.shape[0]
    splits = K // SPLIT_DEPTH  # the remainder, K % 64 columns, belongs to no split
    part = torch.empty((splits, M, N), dtype=torch.float32, device=a.device)
    for split in range(splits):
        lo = split * SPLIT_DEPTH
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        _matmul_kernel[grid](a[:, lo:], w[:, lo:], part[split], M, N, SPLIT_DEPTH, K, K, 1, N, BM=BM, BN=BN, BK=BK)
    c = torch.empty((M, N), dtype=torch.bfloat16, device=a.device)
    _sum_splits_kernel[(triton.cdiv(M * N, 1024),)](part, c, M * N, splits, BLOCK=1024)
    return c
