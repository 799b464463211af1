"""Starting point for the ``fused_adamw`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avg: list[torch.Tensor],
    exp_avg_sq: list[torch.Tensor],
    step: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
) -> None:
    """One AdamW step over a list of tensors, in place; returns None.

    ``params`` is a list of float32 tensors, ``grads`` a list of bfloat16 tensors of the same shapes, ``exp_avg``
    and ``exp_avg_sq`` lists of float32 tensors, or of bfloat16 tensors on the workloads with ``SB = 2`` (each
    element its own contiguous allocation; the math in float32, each state rounded once when stored). Per element:
    ``p *= 1 - lr * weight_decay``; ``m = beta1 m + (1 - beta1) g``; ``v = beta2 v + (1 - beta2) g^2``;
    ``p -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)``. See description.md.
    """
    raise NotImplementedError("implement run(params, grads, exp_avg, exp_avg_sq, step, lr, ...) with Triton kernels")
