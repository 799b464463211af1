# Cheat: split-K (2 K ranges) whose partial kernel stores whole BM-row tiles, rows past M included (the store
# masks the columns only), into a workspace padded to M rounded up to BM rows per split, while the reduction
# reads each split's partials at split * M * N, unpadded: split 1's rows are read shifted by the padding, its
# first rows being split 0's padding (zeros). Right when M % 16 == 0; wrong on every row otherwise (smoke M = 1,
# 13). Appended to the naive solution (its run renamed honest_run).


@triton.jit
def _padded_partial_kernel(a_ptr, w_ptr, part_ptr, M, N, K, SPAN, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    split = tl.program_id(2)
    k_hi = tl.minimum(K, (split + 1) * SPAN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(split * SPAN, k_hi, BK):
        kk = k0 + tl.arange(0, BK)
        x = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < k_hi), other=0.0)
        y = tl.load(w_ptr + rn[None, :] * K + kk[:, None], mask=(kk[:, None] < k_hi) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
    padded_rows = tl.num_programs(0) * BM
    tl.store(part_ptr + (split * padded_rows + rm[:, None]) * N + rn[None, :], acc, mask=rn[None, :] < N)


@triton.jit
def _unpadded_sum_kernel(part_ptr, c_ptr, MN, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < MN
    acc = tl.load(part_ptr + offs, mask=ok, other=0.0) + tl.load(part_ptr + MN + offs, mask=ok, other=0.0)
    tl.store(c_ptr + offs, acc.to(tl.bfloat16), mask=ok)


def run(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = w.shape[0]
    row_blocks = triton.cdiv(M, BM)
    span = triton.cdiv(triton.cdiv(K, 2), BK) * BK
    part = torch.empty((2, row_blocks * BM, N), dtype=torch.float32, device=a.device)
    _padded_partial_kernel[(row_blocks, triton.cdiv(N, BN), 2)](a, w, part, M, N, K, span, BM=BM, BN=BN, BK=BK)
    c = torch.empty((M, N), dtype=torch.bfloat16, device=a.device)
    _unpadded_sum_kernel[(triton.cdiv(M * N, 1024),)](part, c, M * N, BLOCK=1024)
    return c
