"""Reference semantics for the ``multi_lora`` task.

A batch of requests served with different LoRA adapters on one base model (S-LoRA / Punica / vLLM's
multi-LoRA). The batch's ``T`` tokens come in ``NSEG`` contiguous segments (requests): segment ``g`` holds
tokens ``seg_starts[g] .. seg_starts[g + 1] - 1`` and uses adapter ``seg_adapters[g]`` (``-1``: none). Each of
the layer's ``S`` output slices (``S = 3`` for a fused q/k/v projection) has its own adapter weights::

    a = adapter of token t
    y[t, s N:(s + 1) N] = base[t, s N:(s + 1) N] + scaling * (lora_b[s, a] @ (lora_a[s, a] @ x[t]))   (a >= 0)
    y[t, s N:(s + 1) N] = base[t, s N:(s + 1) N]                                                     (a = -1)

with the *shrink* ``lora_a[s, a] [R, H]`` and the *expand* ``lora_b[s, a] [N, R]``. ``base`` is the base
layer's output for the batch. ``reference()`` is what eager multi-adapter code does (HF PEFT's mixed-batch
forward): a loop over slices and adapters, each gathering its tokens, two bfloat16 matmuls, a scaled add
into a copy of ``base``. ``exact()`` is the same in float64 (the oracle); ``rows`` makes every token's row of
``y`` its own compared matrix.
"""

from __future__ import annotations

from typing import Any

import torch


def _check(
    x: torch.Tensor,
    lora_a: torch.Tensor,
    lora_b: torch.Tensor,
    base: torch.Tensor,
    seg_starts: torch.Tensor,
    seg_adapters: torch.Tensor,
) -> tuple[int, int, int, int, int]:
    """(T, S, A, R, N), or ``ValueError`` unless the inputs meet the contract."""
    if x.ndim != 2 or lora_a.ndim != 4 or lora_b.ndim != 4:
        shapes = f"{tuple(x.shape)}, {tuple(lora_a.shape)}, {tuple(lora_b.shape)}"
        raise ValueError(f"x must be [T, H], lora_a [S, A, R, H], lora_b [S, A, N, R]; got {shapes}")
    T, H = x.shape
    S, A, R, Ha = lora_a.shape
    if Ha != H or lora_b.shape[:2] != (S, A) or lora_b.shape[3] != R:
        raise ValueError(f"lora_a [S, A, R, H] and lora_b [S, A, N, R] disagree: {tuple(lora_a.shape)}, {tuple(lora_b.shape)}")
    N = lora_b.shape[2]
    if base.shape != (T, S * N):
        raise ValueError(f"base must be [T, S N] = [{T}, {S * N}], got {tuple(base.shape)}")
    if seg_starts.dtype != torch.int32 or seg_adapters.dtype != torch.int32 or seg_starts.shape != (seg_adapters.shape[0] + 1,):
        raise ValueError("seg_starts must be int32 [NSEG + 1] and seg_adapters int32 [NSEG]")
    for t in (x, lora_a, lora_b, base):
        if t.dtype != torch.bfloat16:
            raise ValueError(f"x, lora_a, lora_b and base must be bfloat16, got {t.dtype}")
    return T, S, A, R, N


def token_adapters(seg_starts: torch.Tensor, seg_adapters: torch.Tensor) -> torch.Tensor:
    """The adapter of every token (int64 [T]), from the segments."""
    lengths = (seg_starts[1:] - seg_starts[:-1]).to(torch.int64)
    return torch.repeat_interleave(seg_adapters.to(torch.int64), lengths)


def reference(
    x: torch.Tensor,
    lora_a: torch.Tensor,
    lora_b: torch.Tensor,
    base: torch.Tensor,
    seg_starts: torch.Tensor,
    seg_adapters: torch.Tensor,
    scaling: float,
) -> torch.Tensor:
    """Eager multi-adapter LoRA: returns a new contiguous bfloat16 ``[T, S N]`` (see the module's docstring)."""
    _, S, A, _, N = _check(x, lora_a, lora_b, base, seg_starts, seg_adapters)
    adapter = token_adapters(seg_starts, seg_adapters)
    y = base.clone()
    for a in range(A):
        rows = (adapter == a).nonzero().squeeze(1)
        if rows.numel() == 0:
            continue
        xa = x.index_select(0, rows)
        for s in range(S):
            delta = (xa @ lora_a[s, a].T) @ lora_b[s, a].T  # shrink, then expand (bfloat16, fp32 accumulation)
            y[rows, s * N : (s + 1) * N] += scaling * delta
    return y


def exact(
    x: torch.Tensor,
    lora_a: torch.Tensor,
    lora_b: torch.Tensor,
    base: torch.Tensor,
    seg_starts: torch.Tensor,
    seg_adapters: torch.Tensor,
    scaling: float,
) -> torch.Tensor:
    """Float64 oracle: every token's delta in float64 (output float64)."""
    _, S, _, _, N = _check(x, lora_a, lora_b, base, seg_starts, seg_adapters)
    adapter = token_adapters(seg_starts, seg_adapters)
    y = base.double().clone()
    used = adapter >= 0
    a = adapter.clamp_min(0)
    for s in range(S):
        shrunk = torch.einsum("th,trh->tr", x.double(), lora_a[s].double()[a])
        delta = torch.einsum("tr,tnr->tn", shrunk, lora_b[s].double()[a])
        y[:, s * N : (s + 1) * N] += torch.where(used[:, None], scaling * delta, torch.zeros_like(delta))
    return y


def rows(outputs: dict[str, torch.Tensor], inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The compared values (``tolerance.views``): ``y`` with every token's row its own ``[1, S N]`` matrix, so
    that one token given the wrong adapter (or none) fails by itself instead of being averaged over the batch."""
    y = outputs["y"]
    return {"y": y.reshape(-1, 1, y.shape[-1])}
