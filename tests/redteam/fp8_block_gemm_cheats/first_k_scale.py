# Wrong scale index along K: the scales of the first K block (As[:, 0] and Bs[:, 0]) reused for every
# K block, as if activations were scaled per token and weights per output block only. Right only for
# inputs whose scales do not vary along K; the generator's outlier channels and per-block weight
# ranges make them vary. (The naive core's gemm reads scale column j * k_scale_step.)
def run(A, As, B, Bs):
    return gemm(A, As, B, Bs, A.shape[1] // 128, k_scale_step=0)
