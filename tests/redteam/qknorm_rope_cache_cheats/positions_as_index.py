# Wrong gather: cos/sin read at row t (the token's index in the batch) instead of row positions[t], as
# if the batch were one sequence starting at position 0; the norm and the cache write are honest.
@triton.jit
def _rope_by_index_kernel(
    normed_ptr, cos_sin_ptr, q_out_ptr, k_tmp_ptr, Hq, Hkv, D, R, BLOCK_HALF: tl.constexpr, BLOCK_D: tl.constexpr
):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    src = normed_ptr + (t * (Hq + Hkv) + h) * D
    if h < Hq:
        dst = q_out_ptr + (t * Hq + h) * D
    else:
        dst = k_tmp_ptr + (t * Hkv + h - Hq) * D
    _rotate_head(src, dst, cos_sin_ptr + t * R, D, R, BLOCK_HALF, BLOCK_D)


def run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache):
    T, Hq, Hkv, D, R = dims(qkv, cos_sin_cache, k_cache)
    normed = normalize(qkv, q_norm_weight, k_norm_weight, Hq, Hkv, D)
    q_out = torch.empty((T, Hq, D), dtype=torch.bfloat16, device=qkv.device)
    k_tmp = torch.empty((T, Hkv, D), dtype=torch.bfloat16, device=qkv.device)
    _rope_by_index_kernel[(T, Hq + Hkv)](
        normed, cos_sin_cache, q_out, k_tmp, Hq, Hkv, D, R,
        BLOCK_HALF=triton.next_power_of_2(R // 2), BLOCK_D=triton.next_power_of_2(D),
    )
    write_cache(k_tmp, qkv, slot_mapping, k_cache, v_cache, Hq, Hkv, D)
    return q_out
