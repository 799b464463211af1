# red-team: smoke only (right on every registered shape; a smoke shape catches it)
# Skipped K tail: K walked in steps of 256 (two scale blocks at a time) with no tail, so an odd last
# block of 128 is dropped. Right at every registered shape (K / 128 is even there); the smoke shapes
# with K = 384 and K = 640 catch it. (The naive core's gemm walks its first k_blocks K blocks.)
def run(A, As, B, Bs):
    return gemm(A, As, B, Bs, (A.shape[1] // 256) * 2)
