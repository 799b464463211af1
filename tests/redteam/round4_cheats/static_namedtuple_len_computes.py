# Cheat (round four, static, class A): a NamedTuple (a tuple to the host) whose __len__ computes the
# answer after the window; the NamedTuple base looked like a plain record.
from typing import NamedTuple

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


class Answer(NamedTuple):
    G: object

    def __len__(self):
        _eager_answer(self.G)
        return 1


def run(G, steps):
    _token_launch(G)
    return Answer(G)
