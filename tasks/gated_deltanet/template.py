"""Starting point for the ``gated_deltanet`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gated delta rule over a prefill: return ``(o, final_state)``.

    ``q``, ``k``, ``v`` are contiguous bfloat16 ``[B, H, T, D]``, ``g`` float32 ``[B, H, T]`` (the log decay) and
    ``beta`` bfloat16 ``[B, H, T]``. With ``qn``, ``kn`` the l2-normalised q and k (``x / sqrt(sum(x^2) + 1e-6)``)
    and a float32 state ``S [D (key), D (value)]`` starting at zero, per batch and head::

        S_t = exp(g_t) (I - beta_t kn_t kn_t^T) S_{t-1} + beta_t kn_t v_t^T,    o_t = D^-0.5 S_t^T qn_t

    Return ``o`` as a new contiguous bfloat16 ``[B, H, T, D]`` and ``final_state = S_T`` as a new contiguous
    float32 ``[B, H, D, D]``. See description.md.
    """
    raise NotImplementedError("implement run(q, k, v, g, beta) with Triton kernels")
