# Wrong extent: one RMS over all of a token's q heads (and one over all its k heads) instead of one per
# head, as a model-wide RMSNorm over the hidden size would do; rotation and cache write are honest.
@triton.jit
def _rmsnorm_all_heads_kernel(
    qkv_ptr, qw_ptr, kw_ptr, normed_ptr, Hq, Hkv, D, eps, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr
):
    t = tl.program_id(0).to(tl.int64)
    which = tl.program_id(1)  # 0: the q heads, 1: the k heads
    h0 = which * Hq
    n_heads = tl.where(which == 0, Hq, Hkv)
    heads = tl.arange(0, BLOCK_H)
    cols = tl.arange(0, BLOCK_D)
    mask = (heads < n_heads)[:, None] & (cols < D)[None, :]
    offs = (h0 + heads)[:, None] * D + cols[None, :]
    x = tl.load(qkv_ptr + t * (Hq + 2 * Hkv) * D + offs, mask=mask, other=0.0).to(tl.float32)
    qw = tl.load(qw_ptr + cols, mask=cols < D, other=0.0).to(tl.float32)
    kw = tl.load(kw_ptr + cols, mask=cols < D, other=0.0).to(tl.float32)
    w = tl.where(which == 0, qw, kw)
    rstd = tl.rsqrt(tl.sum(tl.sum(x * x, axis=1), axis=0) / (n_heads * D) + eps)
    tl.store(normed_ptr + t * (Hq + Hkv) * D + offs, x * rstd * w[None, :], mask=mask)


def run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, slot_mapping, k_cache, v_cache):
    T, Hq, Hkv, D, R = dims(qkv, cos_sin_cache, k_cache)
    normed = torch.empty((T, Hq + Hkv, D), dtype=torch.float32, device=qkv.device)
    _rmsnorm_all_heads_kernel[(T, 2)](
        qkv, q_norm_weight, k_norm_weight, normed, Hq, Hkv, D, EPS,
        BLOCK_H=triton.next_power_of_2(Hq), BLOCK_D=triton.next_power_of_2(D),
    )
    q_out, k_tmp = rotate(normed, positions, cos_sin_cache, Hq, Hkv, D, R)
    write_cache(k_tmp, qkv, slot_mapping, k_cache, v_cache, Hq, Hkv, D)
    return q_out
