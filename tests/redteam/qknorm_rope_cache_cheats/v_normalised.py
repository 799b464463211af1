# Wrong value path: v goes through the key's RMSNorm (each head normalised and multiplied by
# k_norm_weight) before it is cached, as if v were treated like k; q_out and the k cache are honest.
@triton.jit
def _normalise_v_slots_kernel(slot_ptr, v_cache_ptr, kw_ptr, Hkv, D, eps, BLOCK_D: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    slot = tl.load(slot_ptr + t)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    ptrs = v_cache_ptr + (slot * Hkv + h) * D + cols
    v = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(kw_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(v * v, axis=0) / D + eps)
    tl.store(ptrs, (v * rstd * w).to(tl.bfloat16), mask=mask)


def run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache):
    T, Hq, Hkv, D, R = dims(qkv, cos_sin_cache, k_cache)
    q_out = honest_run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache)
    _normalise_v_slots_kernel[(T, Hkv)](slot_mapping, v_cache, k_norm_weight, Hkv, D, EPS, BLOCK_D=triton.next_power_of_2(D))
    return q_out
