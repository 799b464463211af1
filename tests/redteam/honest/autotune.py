# Honest: an autotuned kernel (two configs). Under the interpreter the harness picks the first config
# (autotuning cannot benchmark there); on a GPU it tunes as usual.
@triton.autotune(configs=[triton.Config({"BLOCK": 1024}, num_warps=4), triton.Config({"BLOCK": 2048}, num_warps=8)],
                 key=["numel"])
@triton.jit
def _sumsq_tuned(g_ptr, out_ptr, numel, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, numel, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(g_ptr + b.to(tl.int64) * numel + offs, mask=offs < numel, other=0.0).to(tl.float32)
        acc += x * x
    tl.store(out_ptr + b, tl.sum(acc, axis=0))


def run(G, steps):
    sums = torch.empty((G.shape[0],), dtype=torch.float32, device=G.device)
    _sumsq_tuned[(G.shape[0],)](G, sums, G.shape[1] * G.shape[2])
    return honest_run(G, steps)
