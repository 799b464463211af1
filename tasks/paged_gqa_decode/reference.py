"""Reference semantics for the ``paged_gqa_decode`` task.

One decode step of grouped-query attention over a paged KV cache (vLLM's layout). For sequence
``b`` with ``n = seq_lens[b]`` cached tokens, token ``t < n`` lives in page ``page_table[b, t // 16]``
at slot ``t % 16``; query head ``h`` reads KV head ``h // (Hq // Hkv)``::

    K_b[t] = k_cache[page_table[b, t // 16], t % 16]          # [Hkv, D], t < n
    s[h, t] = scale * q[b, h] . K_b[t, h // G]                # G = Hq / Hkv
    o[b, h] = sum over t < n of softmax_t(s[h, :])[t] * V_b[t, h // G]

Tokens at ``t >= seq_lens[b]`` (the rest of the last page and the pages after it) are not part of
the sequence.
"""

from __future__ import annotations

import torch

PAGE = 16  # tokens per page


def _check(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, page_table: torch.Tensor, seq_lens: torch.Tensor
) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if q.ndim != 3 or k_cache.ndim != 4 or k_cache.shape != v_cache.shape or k_cache.shape[1] != PAGE:
        raise ValueError(f"need q [B, Hq, D] and caches [NP, {PAGE}, Hkv, D], got {tuple(q.shape)}, {tuple(k_cache.shape)}")
    B, Hq, D = q.shape
    if k_cache.shape[3] != D or Hq % k_cache.shape[2]:
        raise ValueError("the caches' head_dim must match q's and Hkv must divide Hq")
    if page_table.ndim != 2 or page_table.shape[0] != B or seq_lens.shape != (B,):
        raise ValueError(
            f"need page_table [B, max_pages] and seq_lens [B], got {tuple(page_table.shape)}, {tuple(seq_lens.shape)}"
        )
    if q.dtype != torch.bfloat16 or k_cache.dtype != torch.bfloat16 or v_cache.dtype != torch.bfloat16:
        raise ValueError("q, k_cache and v_cache must be bfloat16")
    if page_table.dtype != torch.int32 or seq_lens.dtype != torch.int32:
        raise ValueError("page_table and seq_lens must be int32")


def reference(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """Eager PyTorch decode as model code writes it without a paged-attention kernel.

    Gather every sequence's pages into a padded ``[B, L, Hkv, D]`` tensor (``L = 16 * max_pages``),
    repeat each KV head for its ``G`` query heads (``repeat_interleave``, as HF transformers'
    ``repeat_kv``), then masked scores, a float32 softmax and the product with V, as HF's
    ``eager_attention_forward`` does: the score product in bfloat16 (cuBLAS accumulates in float32
    and rounds its output), softmax in float32, probabilities back to bfloat16 for ``@ v``.
    The batch is done at once: at the largest registered shape the repeated K and V are 17 GB each
    (B 32, Hq 64, L 32768), which fits beside everything else on a 139 GB device.
    Returns a new contiguous bfloat16 ``[B, Hq, D]``.
    """
    _check(q, k_cache, v_cache, page_table, seq_lens)
    B, Hq, D = q.shape
    Hkv = k_cache.shape[2]
    L = page_table.shape[1] * PAGE
    pages = page_table.long()
    # [B, max_pages, 16, Hkv, D] -> [B, L, Hkv, D] -> [B, Hkv, L, D] -> [B, Hq, L, D]
    k = k_cache[pages].view(B, L, Hkv, D).transpose(1, 2).repeat_interleave(Hq // Hkv, dim=1)
    v = v_cache[pages].view(B, L, Hkv, D).transpose(1, 2).repeat_interleave(Hq // Hkv, dim=1)
    scores = torch.matmul(q.unsqueeze(2), k.transpose(2, 3)).float() * scale  # [B, Hq, 1, L]
    del k
    beyond = torch.arange(L, device=q.device).unsqueeze(0) >= seq_lens.unsqueeze(1)  # [B, L]
    scores.masked_fill_(beyond[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(probs, v).squeeze(2).contiguous()


def exact(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """Float64 oracle, one sequence at a time: only its ``seq_lens[b]`` tokens are gathered, and the
    ``G`` query heads of a KV head are grouped against it (no repetition). Peak memory is one
    sequence's K and V in float64 (0.5 GB at L = 32768). Returns float64 ``[B, Hq, D]``."""
    _check(q, k_cache, v_cache, page_table, seq_lens)
    B, Hq, D = q.shape
    Hkv = k_cache.shape[2]
    G = Hq // Hkv
    out = torch.empty((B, Hq, D), dtype=torch.float64, device=q.device)
    lens = seq_lens.tolist()
    for b in range(B):
        n = int(lens[b])
        pages = page_table[b, : (n + PAGE - 1) // PAGE].long()
        k = k_cache[pages].reshape(-1, Hkv, D)[:n].double()  # [n, Hkv, D]
        v = v_cache[pages].reshape(-1, Hkv, D)[:n].double()
        qb = q[b].double().view(Hkv, G, D)
        s = torch.einsum("hgd,nhd->hgn", qb, k) * scale
        p = torch.softmax(s, dim=-1)
        out[b] = torch.einsum("hgn,nhd->hgd", p, v).reshape(Hq, D)
    return out
