# No split merge: the cache is split in two halves, but only the last split's softmax output is kept
# (as if the partials overwrote each other instead of being merged by their log-sum-exp).
def run(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv):
    scale = 1.0 / math.sqrt(q_nope.shape[2] + q_pe.shape[2])
    start = kv_c.shape[1] // 2
    return up(attend(absorb(q_nope, w_uk, kv_c.shape[2], 1), q_pe, kv_c, k_pe, scale, start=start), w_uv)
