"""Reference semantics for the ``moe_permute`` task.

The two data movements around the experts of a mixture-of-experts layer. Token ``t`` was routed to the
``K`` experts ``topk_ids[t, 0..K-1]`` with weights ``topk_weights[t, :]``; its ``K`` routing *slots* are
numbered ``s = t K + j``.

*Permute*: the slots sorted by expert, stably (within an expert, in slot order), and each slot's token row
copied there, so that every expert's rows are contiguous::

    order    = stable argsort of topk_ids.flatten()          # slot at each permuted position
    permuted = hidden[order // K]                              # [T K, H]
    offsets  = [0, n_0, n_0 + n_1, ..., T K]                   # expert e's rows: offsets[e] .. offsets[e + 1]

*Unpermute*: the experts' outputs ``expert_out [T K, H]`` (row ``p`` belongs to slot ``order[p]``) merged back
per token with the routing weights::

    combined[t] = sum_j topk_weights[t, j] * expert_out[position of slot t K + j]     # [T, H]

``reference()`` is what eager MoE code does (Megatron-LM's and vLLM's torch paths): an argsort, an
``index_select``, a ``bincount`` and a ``cumsum``, then the weighted rows summed into an fp32 buffer with
``index_add_`` and cast to bfloat16. ``exact()`` computes ``combined`` in float64 (the oracle); the
permutation and the offsets are integers and exact in both.
"""

from __future__ import annotations

import torch


def _check(
    hidden: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, expert_out: torch.Tensor, num_experts: int
) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if hidden.ndim != 2 or topk_ids.ndim != 2 or topk_weights.shape != topk_ids.shape:
        raise ValueError(
            f"hidden must be [T, H] and topk_ids, topk_weights [T, K]; got {tuple(hidden.shape)}, {tuple(topk_ids.shape)}"
        )
    T, K = topk_ids.shape
    if hidden.shape[0] != T or expert_out.shape != (T * K, hidden.shape[1]):
        raise ValueError(f"expert_out must be [T K, H] = [{T * K}, {hidden.shape[1]}], got {tuple(expert_out.shape)}")
    if hidden.dtype != torch.bfloat16 or expert_out.dtype != torch.bfloat16 or topk_weights.dtype != torch.float32:
        raise ValueError("hidden and expert_out must be bfloat16, topk_weights float32")
    if topk_ids.dtype != torch.int32:
        raise ValueError(f"topk_ids must be int32, got {topk_ids.dtype}")
    if isinstance(num_experts, bool) or not isinstance(num_experts, int) or num_experts < 1:
        raise ValueError(f"num_experts must be a positive int, got {num_experts!r}")


def _order(topk_ids: torch.Tensor) -> torch.Tensor:
    """The slot at each permuted position (int64): a stable sort of the slots by expert."""
    return torch.argsort(topk_ids.flatten(), stable=True)


def _offsets(topk_ids: torch.Tensor, num_experts: int) -> torch.Tensor:
    counts = torch.bincount(topk_ids.flatten(), minlength=num_experts)
    return torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)]).to(torch.int32)


def reference(
    hidden: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, expert_out: torch.Tensor, num_experts: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eager permute and unpermute. ``hidden`` bfloat16 ``[T, H]``, ``topk_ids`` int32 ``[T, K]`` (values in
    ``[0, num_experts)``), ``topk_weights`` float32 ``[T, K]``, ``expert_out`` bfloat16 ``[T K, H]`` in permuted
    order. Returns ``(permuted [T K, H] bfloat16, offsets [num_experts + 1] int32, combined [T, H] bfloat16)``,
    new contiguous tensors."""
    _check(hidden, topk_ids, topk_weights, expert_out, num_experts)
    K = topk_ids.shape[1]
    order = _order(topk_ids)
    token = order // K
    permuted = hidden.index_select(0, token)
    offsets = _offsets(topk_ids, num_experts)
    weights = topk_weights.flatten().index_select(0, order)
    combined = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    combined.index_add_(0, token, expert_out.float() * weights[:, None])
    return permuted, offsets, combined.to(torch.bfloat16)


def exact(
    hidden: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, expert_out: torch.Tensor, num_experts: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The oracle: the same permutation and offsets, ``combined`` in float64 (output float64)."""
    _check(hidden, topk_ids, topk_weights, expert_out, num_experts)
    T, K = topk_ids.shape
    order = _order(topk_ids)
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel(), device=order.device)
    rows = expert_out.double().index_select(0, position).view(T, K, -1)
    combined = (rows * topk_weights.double()[:, :, None]).sum(dim=1)
    return hidden.index_select(0, order // K), _offsets(topk_ids, num_experts), combined
