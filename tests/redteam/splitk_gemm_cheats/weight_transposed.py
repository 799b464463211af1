# Cheat: the weight read as [K, N] row-major (the layout of torch.matmul(a, b)'s b, w.t().contiguous()) where the
# task stores it as nn.Linear's [N, K]: the naive tile kernel given the strides of the other layout, so element
# (n, k) comes from w's flat offset k * N + n. Same number of elements, nothing out of bounds; every output pairs
# a row of a with a scrambled column. Appended to the naive solution (its run renamed honest_run).


def run(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = w.shape[0]
    c = torch.empty((M, N), dtype=torch.bfloat16, device=a.device)
    stride_wn, stride_wk = 1, N  # [K, N]'s strides, not w.stride() = (K, 1)
    _matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, w, c, M, N, K, K, stride_wn, stride_wk, N, BM=BM, BN=BN, BK=BK)
    return c
