"""Starting point for the ``mamba2_ssd`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(
    x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor, D: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mamba-2's selective scan: return ``(y, final_state)``, new contiguous bfloat16 ``[B, T, H, P]`` and fp32
    ``[B, H, P, N]``.

    Per batch row and head ``h`` (group ``g = h // (H // G)``), from ``S = 0`` ([P, N], fp32):
    ``S = exp(dt[t, h] A[h]) S + dt[t, h] x[t, h]^T Bm[t, g]`` and ``y[t, h] = S Cm[t, g] + D[h] x[t, h]``;
    ``final_state`` is ``S`` after the last step. See description.md.
    """
    raise NotImplementedError("implement run(x, dt, A, Bm, Cm, D) with Triton kernels")
