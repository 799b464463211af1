# Wrong scatter: token t's k and v written to cache slot t instead of slot_mapping[t], as if the batch
# filled the cache from its start in order; q_out is honest. The token's real slots keep stale values
# and slots 0..T-1 are overwritten.
@triton.jit
def _cache_write_in_order_kernel(k_tmp_ptr, qkv_ptr, k_cache_ptr, v_cache_ptr, Hq, Hkv, D, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < Hkv * D
    k = tl.load(k_tmp_ptr + t * Hkv * D + offs, mask=mask)
    v = tl.load(qkv_ptr + t * (Hq + 2 * Hkv) * D + (Hq + Hkv) * D + offs, mask=mask)
    tl.store(k_cache_ptr + t * Hkv * D + offs, k, mask=mask)
    tl.store(v_cache_ptr + t * Hkv * D + offs, v, mask=mask)


def run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache):
    T, Hq, Hkv, D, R = dims(qkv, cos_sin_cache, k_cache)
    normed = normalize(qkv, q_norm_weight, k_norm_weight, Hq, Hkv, D)
    q_out, k_tmp = rotate(normed, positions, cos_sin_cache, Hq, Hkv, D, R)
    block = triton.next_power_of_2(Hkv * D)
    _cache_write_in_order_kernel[(T,)](k_tmp, qkv, k_cache, v_cache, Hq, Hkv, D, BLOCK=block)
    return q_out
