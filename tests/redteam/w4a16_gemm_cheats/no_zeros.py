# ruff: noqa  (a fragment: appended to tests/solutions/w4a16_gemm_naive.py by the red-team test)
# Zero points ignored: every group dequantised as (q - 8) * s, GPTQ's symmetric default; right only
# for groups whose zero point happens to be 8.
@triton.jit
def _no_zeros_kernel(x_ptr, qw_ptr, s_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m = tl.program_id(1)
    cmask = cols < N
    k = tl.arange(0, 128)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for g in range(0, K // 128):
        kk = g * 128 + k
        words = tl.load(qw_ptr + (kk // 8)[:, None] * N + cols[None, :], mask=cmask[None, :], other=0)
        q = (words >> ((kk % 8) * 4)[:, None]) & 0xF
        s = tl.load(s_ptr + g * N + cols, mask=cmask, other=0.0).to(tl.float32)
        xk = tl.load(x_ptr + m * K + kk).to(tl.float32)
        acc += tl.sum(xk[:, None] * ((q - 8).to(tl.float32) * s[None, :]), axis=0)
    tl.store(y_ptr + m * N + cols, acc.to(tl.bfloat16), mask=cmask)


def run(x, qweight, scales, qzeros):
    M, K = x.shape
    N = qweight.shape[1]
    y = torch.empty((M, N), dtype=torch.bfloat16, device=x.device)
    _no_zeros_kernel[(triton.cdiv(N, 64), M)](x, qweight, scales, y, N, K, BLOCK_N=64)
    return y
