# Wrong softmax scale: 1 / sqrt(DN) (the no-rope head dimension, 128) instead of 1 / sqrt(DN + DR)
# (the query-key head dimension, 192): every logit is 1.22x too large.
def run(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv):
    scale = 1.0 / math.sqrt(q_nope.shape[2])
    return up(attend(absorb(q_nope, w_uk, kv_c.shape[2], 1), q_pe, kv_c, k_pe, scale), w_uv)
