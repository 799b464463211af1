# red-team: smoke only (right on every registered shape; a smoke shape catches it)
# Skipped tail: only whole 32-row blocks are walked (rows = S - S % 32), as if S were always a
# multiple of the tile. Right at every registered shape (S is a multiple of 128 there); the smoke
# shape with S = 100 catches it: the last 4 queries get no dq (their rows stay unwritten) and give
# nothing to dk and dv. (The naive core walks its first `rows` rows.)
def run(q, k, v, o, do, lse, scale):
    S = q.shape[2]
    return attention_bwd(q, k, v, o, do, lse, scale, rows=S - S % BLOCK)
