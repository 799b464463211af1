# The core every round-four static cheat shares: imports, one token Triton launch inside the timed call,
# and the answer computed in eager torch. test_round4_static.py puts it in front of each static_*.py.
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


def _token_launch(G):
    """One small Triton launch inside the timed call, so launches are counted."""
    out = torch.empty_like(G)
    _copy_kernel[(1,)](G, out, min(16, G.numel()), BLOCK=16)
    return out


def _eager_answer(G):
    """The real work, in eager torch, done where no recorder looks."""
    X = G.float()
    X = X / (X.norm(dim=(1, 2), keepdim=True) * 1.01 + 1e-7)
    for _ in range(5):
        X = 1.5 * X - 0.5 * (X @ X.mT) @ X
    return X.half()
