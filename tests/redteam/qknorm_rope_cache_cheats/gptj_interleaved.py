# Wrong rotation: GPT-J style, channel 2i paired with 2i + 1, instead of NeoX's halves (channel i with
# i + R/2); the norm, the cos/sin gather and the cache write are honest.
@triton.jit
def _rotate_head_interleaved(src_ptr, dst_ptr, cs_ptr, D, R, BLOCK_HALF: tl.constexpr, BLOCK_D: tl.constexpr):
    half = R // 2
    i = tl.arange(0, BLOCK_HALF)
    imask = i < half
    even = tl.load(src_ptr + 2 * i, mask=imask, other=0.0)
    odd = tl.load(src_ptr + 2 * i + 1, mask=imask, other=0.0)
    cos = tl.load(cs_ptr + i, mask=imask, other=0.0)
    sin = tl.load(cs_ptr + half + i, mask=imask, other=0.0)
    tl.store(dst_ptr + 2 * i, (even * cos - odd * sin).to(tl.bfloat16), mask=imask)
    tl.store(dst_ptr + 2 * i + 1, (odd * cos + even * sin).to(tl.bfloat16), mask=imask)
    cols = tl.arange(0, BLOCK_D)
    rest = (cols >= R) & (cols < D)
    tl.store(dst_ptr + cols, tl.load(src_ptr + cols, mask=rest, other=0.0).to(tl.bfloat16), mask=rest)


@triton.jit
def _rope_interleaved_kernel(
    normed_ptr, pos_ptr, cos_sin_ptr, q_out_ptr, k_tmp_ptr, Hq, Hkv, D, R, BLOCK_HALF: tl.constexpr, BLOCK_D: tl.constexpr
):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    pos = tl.load(pos_ptr + t)
    src = normed_ptr + (t * (Hq + Hkv) + h) * D
    if h < Hq:
        dst = q_out_ptr + (t * Hq + h) * D
    else:
        dst = k_tmp_ptr + (t * Hkv + h - Hq) * D
    _rotate_head_interleaved(src, dst, cos_sin_ptr + pos * R, D, R, BLOCK_HALF, BLOCK_D)


def run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache):
    T, Hq, Hkv, D, R = dims(qkv, cos_sin_cache, k_cache)
    normed = normalize(qkv, q_norm_weight, k_norm_weight, Hq, Hkv, D)
    q_out = torch.empty((T, Hq, D), dtype=torch.bfloat16, device=qkv.device)
    k_tmp = torch.empty((T, Hkv, D), dtype=torch.bfloat16, device=qkv.device)
    _rope_interleaved_kernel[(T, Hq + Hkv)](
        normed, positions, cos_sin_cache, q_out, k_tmp, Hq, Hkv, D, R,
        BLOCK_HALF=triton.next_power_of_2(R // 2), BLOCK_D=triton.next_power_of_2(D),
    )
    write_cache(k_tmp, qkv, slot_mapping, k_cache, v_cache, Hq, Hkv, D)
    return q_out
