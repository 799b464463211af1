# ruff: noqa  (a fragment: appended to tests/solutions/w4a16_gemm_naive.py by the red-team test)
# A GEMV that handles only M = 1: the row stride of x is dropped, so every output row is computed from
# row 0 of x (right on the M = 1 workloads, wrong on every row after the first otherwise).
def run(x, qweight, scales, qzeros):
    return matmul(x, qweight, scales, qzeros, 0)
