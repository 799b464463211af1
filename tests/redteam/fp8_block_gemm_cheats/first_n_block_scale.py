# Wrong scale index along N: one weight scale per K block for all output columns (Bs[0, j], the first
# block row), as if B were scaled per 1 x 128 group of K only. Right only for inputs whose weight
# scales do not vary along N. (The naive core's gemm reads Bs row (n // 128) * n_scale_step.)
def run(A, As, B, Bs):
    return gemm(A, As, B, Bs, A.shape[1] // 128, n_scale_step=0)
