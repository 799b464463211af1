"""Starting point for the ``fused_linear_ce`` task: implement ``run`` with Triton."""

import torch
import triton
import triton.language as tl


def run(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LM head plus token-mean cross-entropy, forward and backward: return ``(loss, dh, dW)``.

    ``h`` is a contiguous bfloat16 ``[BT, D]``, ``W`` a contiguous bfloat16 ``[V, D]`` (logits = h @ W^T)
    and ``targets`` a contiguous int64 ``[BT]`` of ids in ``[0, V)`` or -100 (ignored). With ``n`` the
    kept tokens: ``loss`` = mean over them of ``logsumexp(z_i) - z_i[t_i]`` as a new float32 0-d tensor;
    with ``G = (softmax(z_i) - onehot(t_i)) / n`` on kept rows and 0 on ignored rows, ``dh = G @ W`` as a
    new bfloat16 ``[BT, D]`` and ``dW = G^T @ h`` as a new bfloat16 ``[V, D]``. See description.md.
    """
    raise NotImplementedError("implement run(h, W, targets) with Triton kernels")
