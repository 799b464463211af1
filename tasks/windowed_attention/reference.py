"""Reference semantics for the ``windowed_attention`` task.

Sliding-window, document-masked causal attention over ``q, k, v [B, H, S, D]``. Sequence ``b`` is a
packing of documents with boundaries ``cu_seqlens[b] = [0, c_1, ..., S]``; query ``i`` attends key
``j`` when both lie in the same document and ``i - W < j <= i`` (``W = window``)::

    s_ij = (q_i . k_j) / sqrt(D)                        for the allowed j, -inf otherwise
    o_i  = sum_j softmax_j(s_ij) v_j

Every query attends at least itself, so no row is empty.
"""

from __future__ import annotations

import torch

# Largest fp32 score tensor the reference materialises at once (4 GiB): one head's [S, S] at S = 32768,
# all 16 heads of a sequence at S = 8192.
SCORE_BUDGET_BYTES: int = 1 << 32


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, window: int) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if q.ndim != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k and v must all be [B, H, S, D], got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if q.dtype != torch.bfloat16 or k.dtype != torch.bfloat16 or v.dtype != torch.bfloat16:
        raise ValueError("q, k and v must be bfloat16")
    if cu_seqlens.dtype != torch.int32 or cu_seqlens.ndim != 2 or cu_seqlens.shape[0] != q.shape[0]:
        raise ValueError(f"cu_seqlens must be int32 [B, NDOC + 1], got {cu_seqlens.dtype} {tuple(cu_seqlens.shape)}")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")


def allowed_mask(cu: torch.Tensor, S: int, window: int) -> torch.Tensor:
    """Boolean ``[S, S]``: ``mask[i, j]`` is True when query ``i`` attends key ``j`` (one sequence).

    Built from positions and document ids, as model code builds a packed sliding-window mask.
    """
    pos = torch.arange(S, device=cu.device)
    doc = torch.searchsorted(cu[1:-1].to(torch.int64), pos, right=True)  # document id of every token
    i, j = pos[:, None], pos[None, :]
    return (j <= i) & (j > i - window) & (doc[:, None] == doc[None, :])


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, window: int) -> torch.Tensor:
    """Dense masked attention as eager model code writes it (HF transformers' eager path).

    Per sequence: build the ``[S, S]`` mask, then for a group of heads: fp32 scores ``(q / sqrt(D)) k^T``,
    ``masked_fill`` with -inf, fp32 softmax, probabilities cast to bfloat16 and multiplied with ``v``
    (fp32 accumulation). A dense ``[B, H, S, S]`` fp32 score tensor would need 137 GB per sequence at
    S = 32768, so the reference loops over sequences and over groups of heads whose scores fit
    ``SCORE_BUDGET_BYTES``, as model code does when memory forces it (at S = 32768 one head at a time:
    4.3 GB of scores, about 12 GB with the softmax output and the bfloat16 probabilities).

    ``q``, ``k``, ``v``: bfloat16 ``[B, H, S, D]``; ``cu_seqlens``: int32 ``[B, NDOC + 1]``; ``window``:
    int. Returns a new contiguous bfloat16 ``[B, H, S, D]``.
    """
    _check(q, k, v, cu_seqlens, window)
    B, H, S, D = q.shape
    scale = D**-0.5
    heads = max(1, min(H, SCORE_BUDGET_BYTES // (4 * S * S)))
    out = torch.empty_like(q)
    for b in range(B):
        blocked = ~allowed_mask(cu_seqlens[b], S, window)
        for h0 in range(0, H, heads):
            hs = slice(h0, min(H, h0 + heads))
            scores = torch.matmul(q[b, hs].float() * scale, k[b, hs].float().transpose(-1, -2))
            scores.masked_fill_(blocked, float("-inf"))
            probs = torch.softmax(scores, dim=-1).to(q.dtype)
            del scores
            out[b, hs] = torch.matmul(probs, v[b, hs])
            del probs
    return out


def library(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, window: int) -> torch.Tensor:
    """The library call a practitioner uses instead (task.toml ``[library]``): PyTorch's fused
    ``scaled_dot_product_attention`` with the boolean window-and-document mask, one sequence at a time (its
    memory-efficient backend takes an arbitrary mask; the flash backend takes none). Returns bfloat16
    ``[B, H, S, D]``."""
    _check(q, k, v, cu_seqlens, window)
    B, S = q.shape[0], q.shape[2]
    out = torch.empty_like(q)
    for b in range(B):
        mask = allowed_mask(cu_seqlens[b], S, window)
        out[b] = torch.nn.functional.scaled_dot_product_attention(q[b : b + 1], k[b : b + 1], v[b : b + 1], attn_mask=mask)[0]
    return out


def exact(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, window: int) -> torch.Tensor:
    """Float64 oracle (output float64): the same attention, in query chunks over the keys they can see.

    For each sequence, document and chunk of at most 512 queries ``[i0, i1)``, only the keys
    ``[max(doc start, i0 - W + 1), i1)`` can be attended; the chunk's scores for all heads are formed in
    float64 over those keys only, masked, and reduced. The result is exact either way; the chunks keep
    the peak at about 0.6 GB at the registered shapes (32 heads x 512 queries x 4607 keys x 8 bytes).
    """
    _check(q, k, v, cu_seqlens, window)
    B, H, S, D = q.shape
    chunk = 512
    out = torch.empty((B, H, S, D), dtype=torch.float64, device=q.device)
    qd, kd, vd = q.double() / D**0.5, k.double(), v.double()
    bounds = cu_seqlens.to(torch.int64).tolist()
    for b in range(B):
        for start, end in zip(bounds[b][:-1], bounds[b][1:], strict=True):
            for i0 in range(start, end, chunk):
                i1 = min(end, i0 + chunk)
                j0 = max(start, i0 - window + 1)
                i = torch.arange(i0, i1, device=q.device)[:, None]
                j = torch.arange(j0, i1, device=q.device)[None, :]
                scores = torch.matmul(qd[b, :, i0:i1], kd[b, :, j0:i1].transpose(-1, -2))
                scores.masked_fill_(~((j <= i) & (j > i - window)), float("-inf"))
                out[b, :, i0:i1] = torch.matmul(torch.softmax(scores, dim=-1), vd[b, :, j0:i1])
    return out


def rows(outputs: dict[str, torch.Tensor], inputs: dict[str, object]) -> dict[str, torch.Tensor]:
    """The compared values (``tolerance.views``): ``o`` with every query row its own ``[1, D]`` matrix.

    The checker holds each compared matrix to a relative Frobenius bound; comparing row by row means a
    single query that attends one wrong key (an off-by-one window edge, a key across a document
    boundary) fails by itself instead of being averaged away over the ``S`` rows of a head.
    """
    o = outputs["o"]
    return {"o": o.reshape(-1, 1, o.shape[-1])}
