"""Reference semantics for the ``fused_moe_forward`` task.

The forward pass of a mixture-of-experts MLP block (Qwen3-MoE, Mixtral, DeepSeek's routed experts). Each of
the ``T`` tokens is routed by its fp32 router logits ``router_logits[t, :E]``: softmax, the ``K`` most
probable experts, their probabilities renormalised to sum to one (Qwen3's ``norm_topk_prob``, Mixtral)::

    p[t]            = softmax(router_logits[t])                       # fp32, over the E experts
    ids[t, :K]      = the K largest entries of p[t]  (= of router_logits[t]: softmax keeps the order)
    weight[t, j]    = p[t, ids[t, j]] / sum_i p[t, ids[t, i]]

Every expert ``e`` is a SwiGLU MLP with a fused gate/up projection ``w13[e] [2 I, H]`` (gate rows ``0 .. I-1``,
up rows ``I .. 2 I - 1``) and a down projection ``w2[e] [H, I]``::

    gate, up        = split(w13[e] @ x)                                # [I] each
    expert_e(x)     = w2[e] @ (silu(gate) * up)                        # [H], silu(g) = g * sigmoid(g)
    out[t]          = sum_j weight[t, j] * expert_{ids[t, j]}(hidden[t])

``reference()`` is how widely used model code writes it (Hugging Face's Qwen3-MoE and Mixtral blocks): the
routing in fp32, the weights cast to bfloat16, a one-hot expert mask, then a loop over the experts that got
tokens, each gathering its tokens' rows, two bfloat16 matmuls around the SwiGLU, a multiply by the routing
weights and an ``index_add_`` into a zeroed bfloat16 output. ``library()`` is the grouped-GEMM forward a practitioner has instead
(torchtitan's MoE: ``torch._grouped_mm``), timed as a second baseline. ``exact()`` is the oracle: the same routing
choice (the top-K set is taken from the fp32 logits, identical in both; inputs.py keeps every row's logits at
least ``GAP`` apart so that no rounding can reorder them) and everything else in float64. ``rows`` makes every
token's row of ``out`` its own compared matrix.
"""

from __future__ import annotations

from typing import Any

import torch


def _check(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, top_k: int) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if hidden.ndim != 2 or router_logits.ndim != 2 or w13.ndim != 3 or w2.ndim != 3:
        shapes = f"{tuple(hidden.shape)}, {tuple(router_logits.shape)}, {tuple(w13.shape)}, {tuple(w2.shape)}"
        raise ValueError(f"hidden must be [T, H], router_logits [T, E], w13 [E, 2 I, H], w2 [E, H, I]; got {shapes}")
    T, H = hidden.shape
    E = router_logits.shape[1]
    I2 = w13.shape[1]
    if router_logits.shape[0] != T or w13.shape != (E, I2, H) or I2 % 2 or w2.shape != (E, H, I2 // 2):
        shapes = f"{tuple(router_logits.shape)}, {tuple(w13.shape)}, {tuple(w2.shape)}"
        raise ValueError(f"router_logits [T, E], w13 [E, 2 I, H] and w2 [E, H, I] disagree with hidden [{T}, {H}]: {shapes}")
    if hidden.dtype != torch.bfloat16 or w13.dtype != torch.bfloat16 or w2.dtype != torch.bfloat16:
        raise ValueError("hidden, w13 and w2 must be bfloat16")
    if router_logits.dtype != torch.float32:
        raise ValueError(f"router_logits must be float32, got {router_logits.dtype}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= E:
        raise ValueError(f"top_k must be an int in [1, E = {E}], got {top_k!r}")


def route(router_logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The routing in fp32, as the model code does it: (weights float32 [T, K], ids int64 [T, K])."""
    probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    return weights / weights.sum(dim=-1, keepdim=True), ids


def reference(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, top_k: int) -> torch.Tensor:
    """Eager MoE forward: returns a new contiguous bfloat16 ``[T, H]`` (see the module's docstring)."""
    _check(hidden, router_logits, w13, w2, top_k)
    E = router_logits.shape[1]
    inter = w2.shape[2]
    weights, ids = route(router_logits, top_k)
    weights = weights.to(hidden.dtype)
    out = torch.zeros_like(hidden)
    mask = torch.nn.functional.one_hot(ids, num_classes=E).permute(2, 1, 0)  # [E, K, T]
    hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
    for e in hit[:, 0].tolist():  # the experts that got tokens (a host synchronisation, as in the model code)
        slot, token = torch.where(mask[e])
        rows = hidden[token]
        gate_up = torch.nn.functional.linear(rows, w13[e])
        act = torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:]
        expert_out = torch.nn.functional.linear(act, w2[e]) * weights[token, slot, None]
        out.index_add_(0, token, expert_out)
    return out


def library(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, top_k: int) -> torch.Tensor:
    """The library call a practitioner has instead (task.toml ``[library]``): PyTorch's grouped GEMM,
    ``torch._grouped_mm`` (CUTLASS on Hopper), for both projections of every expert at once, as torchtitan's MoE
    runs its experts; routing, permutation and combine stay eager. Returns what ``reference`` returns: a new
    contiguous bfloat16 ``[T, H]``.

    Its dataflow: the routing as the reference's (``route``: fp32 softmax, top-K, renormalised); the ``T K``
    slots sorted stably by expert (one sort of int64 ids) and every expert's end row found on the device
    (``searchsorted``, int32 as ``_grouped_mm`` takes its ``offs``: no host synchronisation, where the reference
    reads the experts that got tokens to the host); the tokens' rows gathered into expert order (``index_select``,
    read and write 2 T K H bytes each); one grouped GEMM against ``w13`` as stored (its transpose is a view:
    the gate and up halves in one ``[T K, 2 I]`` product, 4 T K I bytes written, each expert's ``w13`` read
    once); the SwiGLU as the reference writes it (``silu`` of the gate half, times the up half: 12 T K I bytes);
    one grouped GEMM against ``w2`` (2 T K H bytes written); the rows scaled in place by their bfloat16 routing
    weights and ``index_add_`` into a zeroed bfloat16 output, as the reference combines. About a dozen
    launches in all, where the reference launches about ten per expert that got tokens (128 experts: over a
    thousand) and writes and searches a ``[E, K, T]`` one-hot mask; the bytes per slot are the reference's.
    ``_grouped_mm`` wants bfloat16 operands and 16-byte strides (``H`` and ``I`` multiples of 8, true of every
    workload); ragged groups, empty ones included, need no padding."""
    _check(hidden, router_logits, w13, w2, top_k)
    E = router_logits.shape[1]
    inter = w2.shape[2]
    weights, ids = route(router_logits, top_k)
    expert_sorted, slot_sorted = torch.sort(ids.reshape(-1), stable=True)  # permuted row p holds slot slot_sorted[p]
    experts = torch.arange(E, device=ids.device)
    ends = torch.searchsorted(expert_sorted, experts, right=True, out_int32=True)  # expert e's rows end at ends[e]
    tokens = slot_sorted // top_k
    rows = hidden.index_select(0, tokens)
    gate_up = torch._grouped_mm(rows, w13.transpose(1, 2), offs=ends)  # [T K, 2 I]
    act = torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:]
    expert_out = torch._grouped_mm(act, w2.transpose(1, 2), offs=ends)  # [T K, H]
    expert_out.mul_(weights.reshape(-1)[slot_sorted].to(hidden.dtype).unsqueeze(1))
    return torch.zeros_like(hidden).index_add_(0, tokens, expert_out)


def exact(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, top_k: int) -> torch.Tensor:
    """Float64 oracle: the top-K set from the fp32 logits (as every honest kernel picks it), the weights and
    every expert's SwiGLU MLP in float64 (output float64 ``[T, H]``)."""
    _check(hidden, router_logits, w13, w2, top_k)
    inter = w2.shape[2]
    logits = router_logits.double()
    chosen, ids = torch.topk(logits, top_k, dim=-1)
    weights = torch.softmax(chosen, dim=-1)  # = the renormalised top-K probabilities: the full sum cancels
    x = hidden.double()
    out = torch.zeros_like(x)
    for e in torch.unique(ids).tolist():
        token, slot = torch.where(ids == e)
        gate_up = x[token] @ w13[e].double().T
        act = torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:]
        out.index_add_(0, token, (act @ w2[e].double().T) * weights[token, slot, None])
    return out


def rows(outputs: dict[str, torch.Tensor], inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The compared values (``tolerance.views``): ``out`` with every token's row its own ``[1, H]`` matrix, so that
    one token routed wrongly (a dropped expert, a wrong weight) fails by itself instead of being averaged over
    the batch."""
    out = outputs["out"]
    return {"out": out.reshape(-1, 1, out.shape[-1])}
