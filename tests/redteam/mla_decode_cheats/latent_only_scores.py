# Dropped rope part: scores from the latent alone (q_lat . kv_c), without q_pe . k_pe.
def run(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv):
    scale = 1.0 / math.sqrt(q_nope.shape[2] + q_pe.shape[2])
    return up(attend(absorb(q_nope, w_uk, kv_c.shape[2], 1), q_pe, kv_c, k_pe, scale, use_rope=False), w_uv)
