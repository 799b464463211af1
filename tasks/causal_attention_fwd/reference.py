"""Reference semantics for the ``causal_attention_fwd`` task.

Causal softmax attention, per batch ``b`` and query head ``h`` (``q [S, D]``; ``k, v [S, D]`` of the
key/value head ``h // (Hq // Hkv)``, grouped-query attention)::

    s = scale * q @ k^T            # [S, S]; s[i, j] = -inf where j > i (query i sees keys 0..i)
    p = softmax(s, dim=-1)         # each row sums to 1
    o = p @ v                      # [S, D], bfloat16

``reference()`` is the eager, materialised attention that model code runs without fused kernels,
written as GPT-NeoX's ``_attn`` in HF transformers writes it: the scores in float32 (query and key
upcast before the product, for stability), ``masked_fill`` of the upper triangle with ``-inf``, a
float32 softmax, the probabilities cast back to bfloat16 and multiplied by ``v`` in bfloat16. Grouped
key/value heads are expanded first, as HF's ``repeat_kv`` does. ``exact()`` is the float64 oracle.
"""

from __future__ import annotations

import torch

# Float32 score elements per chunk of (batch, head) pairs in reference(): 2^31 (8.6 GB). The whole
# [B, Hq, S, S] float32 score tensor is 8.6 GB at [4, 32, 4096] and [8, 16, 2048] (one chunk), but 34 GB
# at [1, 32, 16384] and [2, 64, 8192], and the eager chain holds two of them at once (the scores and
# the next op's output): 70 GB beside the oracle and the solution does not fit. So the reference loops
# over chunks of heads there, as model code does when memory forces it (4 chunks).
REFERENCE_CHUNK_ELEMS: int = 1 << 31
# Float64 elements of [S, S] per chunk in exact(): 2^27 (1 GB; one head at S = 16384 is 2 GB).
EXACT_CHUNK_ELEMS: int = 1 << 27


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> tuple[int, int, int, int, int]:
    """Raise ``ValueError`` unless the inputs meet the contract; return ``(B, Hq, Hkv, S, D)``."""
    if q.ndim != 4 or k.ndim != 4 or k.shape != v.shape:
        raise ValueError(f"q must be [B, Hq, S, D] and k, v [B, Hkv, S, D], got {[tuple(t.shape) for t in (q, k, v)]}")
    B, Hq, S, D = q.shape
    Hkv = k.shape[1]
    if k.shape[0] != B or k.shape[2:] != (S, D) or Hkv == 0 or Hq % Hkv != 0:
        raise ValueError(f"k and v must be [{B}, Hkv, {S}, {D}] with Hkv dividing Hq = {Hq}, got {tuple(k.shape)}")
    if any(t.dtype != torch.bfloat16 for t in (q, k, v)):
        raise ValueError("q, k and v must be bfloat16")
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    return B, Hq, Hkv, S, D


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """``[B, Hkv, S, D]`` -> ``[B, Hkv * n_rep, S, D]``: query head ``h`` gets key/value head ``h // n_rep``.

    What HF transformers' ``repeat_kv`` does (an expand, then a copying reshape)."""
    if n_rep == 1:
        return x
    B, Hkv, S, D = x.shape
    return x[:, :, None, :, :].expand(B, Hkv, n_rep, S, D).reshape(B, Hkv * n_rep, S, D)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Eager materialised causal attention (GPT-NeoX's float32 scores), returning bfloat16 ``[B, Hq, S, D]``.

    ``q``: bfloat16 ``[B, Hq, S, D]``; ``k, v``: bfloat16 ``[B, Hkv, S, D]``; ``scale``: 1/sqrt(D).
    The (batch, head) pairs are processed in chunks of at most ``REFERENCE_CHUNK_ELEMS`` score
    elements (one chunk at two of the registered shapes, four at the other two).
    """
    B, Hq, Hkv, S, D = _check(q, k, v, scale)
    k = repeat_kv(k, Hq // Hkv)
    v = repeat_kv(v, Hq // Hkv)
    causal_mask = torch.ones((S, S), dtype=torch.bool, device=q.device).triu(1)  # True above the diagonal
    o = torch.empty((B, Hq, S, D), dtype=torch.bfloat16, device=q.device)
    qf, kf, vf, of = (t.reshape(B * Hq, S, D) for t in (q, k, v, o))
    step = max(1, REFERENCE_CHUNK_ELEMS // (S * S))
    for i in range(0, B * Hq, step):
        j = min(i + step, B * Hq)
        scores = torch.matmul(qf[i:j].float(), kf[i:j].float().transpose(-2, -1)) * scale
        scores = scores.masked_fill(causal_mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1).to(v.dtype)
        del scores
        of[i:j] = torch.matmul(probs, vf[i:j])
        del probs
    return o


def library(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """The library call a practitioner uses instead (task.toml ``[library]``): PyTorch's fused
    ``scaled_dot_product_attention`` with the causal flag and grouped key/value heads (its flash backend on an
    H100/H200 at these shapes). Returns bfloat16 ``[B, Hq, S, D]``."""
    _, Hq, Hkv, _, _ = _check(q, k, v, scale)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=Hq != Hkv)


def exact(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Float64 oracle: the same function with every intermediate in float64 (output float64).

    Chunks of query heads of one batch, at most ``EXACT_CHUNK_ELEMS`` score elements each (and at
    least one head: 2 GB of float64 at S = 16384); key/value heads are indexed, not copied.
    """
    B, Hq, Hkv, S, D = _check(q, k, v, scale)
    group = Hq // Hkv
    hidden = torch.ones((S, S), dtype=torch.bool, device=q.device).triu(1)
    o = torch.empty((B, Hq, S, D), dtype=torch.float64, device=q.device)
    step = max(1, EXACT_CHUNK_ELEMS // (S * S))
    for b in range(B):
        for h0 in range(0, Hq, step):
            heads = torch.arange(h0, min(h0 + step, Hq), device=q.device)
            qd = q[b, heads].double()
            kd = k[b, heads // group].double()
            vd = v[b, heads // group].double()
            s = torch.matmul(qd, kd.transpose(-2, -1)).mul_(scale).masked_fill_(hidden, float("-inf"))
            p = torch.softmax(s, dim=-1)
            del s
            o[b, heads] = torch.matmul(p, vd)
            del p
    return o
