# ruff: noqa  (a fragment: appended to tests/solutions/w4a16_gemm_naive.py by the red-team test)
# Wrong group size: scales and zero points of group k // 64 (clamped to the last group), as if the
# checkpoint had group_size = 64; right only where neighbouring groups happen to share a scale and zero.
@triton.jit
def _group64_kernel(x_ptr, qw_ptr, s_ptr, qz_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m = tl.program_id(1)
    cmask = cols < N
    k = tl.arange(0, 64)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for c in range(0, K // 64):
        g = tl.minimum(c, K // 128 - 1)
        kk = c * 64 + k
        words = tl.load(qw_ptr + (kk // 8)[:, None] * N + cols[None, :], mask=cmask[None, :], other=0)
        q = (words >> ((kk % 8) * 4)[:, None]) & 0xF
        zw = tl.load(qz_ptr + g * (N // 8) + cols // 8, mask=cmask, other=0)
        z = (zw >> ((cols % 8) * 4)) & 0xF
        s = tl.load(s_ptr + g * N + cols, mask=cmask, other=0.0).to(tl.float32)
        xk = tl.load(x_ptr + m * K + kk).to(tl.float32)
        acc += tl.sum(xk[:, None] * ((q - z[None, :]).to(tl.float32) * s[None, :]), axis=0)
    tl.store(y_ptr + m * N + cols, acc.to(tl.bfloat16), mask=cmask)


def run(x, qweight, scales, qzeros):
    M, K = x.shape
    N = qweight.shape[1]
    y = torch.empty((M, N), dtype=torch.bfloat16, device=x.device)
    _group64_kernel[(triton.cdiv(N, 64), M)](x, qweight, scales, qzeros, y, N, K, BLOCK_N=64)
    return y
