# w_uk applied from the wrong side: each head's [DN, DC] block read as if it were stored [DC, DN] and
# transposed (strides swapped), so q_lat[c] = sum_n q_nope[n] * w_uk_flat[h, c * DN + n].
def run(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv):
    scale = 1.0 / math.sqrt(q_nope.shape[2] + q_pe.shape[2])
    return up(attend(absorb(q_nope, w_uk, 1, q_nope.shape[2]), q_pe, kv_c, k_pe, scale), w_uv)
