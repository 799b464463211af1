"""Reference semantics for the ``mla_decode`` task.

DeepSeek-V2/V3 multi-head latent attention (MLA), one decode step. Per sequence ``b`` the cache holds,
per token, a compressed latent ``kv_c [DC]`` (after its RMSNorm) and a rotary key ``k_pe [DR]``
(already rotated, shared by every head). Each of the ``H`` heads up-projects the latent to its own key
and value::

    k_nope[h] = kv_c @ w_uk[h]^T           # w_uk [H, DN, DC]: latent -> key (DN)
    v[h]      = kv_c @ w_uv[h]             # w_uv [H, DC, DV]: latent -> value (DV)
    k[h]      = cat(k_nope[h], k_pe)       # [L, DN + DR]
    q[h]      = cat(q_nope[h], q_pe[h])    # [DN + DR], the new token's query
    o[h]      = softmax(q[h] . k[h]^T * scale) @ v[h],   scale = 1 / sqrt(DN + DR)

The same output, computed the "absorbed" way (the two forms are identical in exact arithmetic)::

    q_lat[h] = w_uk[h]^T q_nope[h]                        # [DC]
    s[h, t]  = (q_lat[h] . kv_c[t] + q_pe[h] . k_pe[t]) * scale
    o[h]     = w_uv[h]^T (softmax(s[h]) @ kv_c)           # [DV]

``reference()`` is the first form as DeepSeek's and Hugging Face's eager model code writes it;
``exact()`` is the second in float64 (the correctness oracle).
"""

from __future__ import annotations

import math

import torch

# Up-projected key and value bytes the reference may hold at once: B16 L32768 would need ~60 GB for the
# whole batch's k_nope, v and the concatenated k, so the reference loops over chunks of sequences.
REFERENCE_CHUNK_BYTES = 8 << 30
# Float64 latent cache bytes the oracle converts at once (per chunk of sequences).
EXACT_CHUNK_BYTES = 2 << 30


def _check(
    q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor
) -> tuple[int, int, int, int, int, int, int]:
    """Raise ``ValueError`` unless the inputs meet the contract; return ``(B, L, H, DC, DR, DN, DV)``."""
    if q_nope.ndim != 3 or q_pe.ndim != 3 or kv_c.ndim != 3 or k_pe.ndim != 3 or w_uk.ndim != 3 or w_uv.ndim != 3:
        raise ValueError("q_nope, q_pe, kv_c, k_pe, w_uk and w_uv must all be 3-d")
    B, H, DN = q_nope.shape
    L, DC = kv_c.shape[1], kv_c.shape[2]
    DR, DV = q_pe.shape[2], w_uv.shape[2]
    want = {
        "q_pe": (B, H, DR),
        "kv_c": (B, L, DC),
        "k_pe": (B, L, DR),
        "w_uk": (H, DN, DC),
        "w_uv": (H, DC, DV),
    }
    got = {"q_pe": q_pe, "kv_c": kv_c, "k_pe": k_pe, "w_uk": w_uk, "w_uv": w_uv}
    for name, shape in want.items():
        if tuple(got[name].shape) != shape:
            raise ValueError(f"{name} must be {list(shape)}, got {list(got[name].shape)}")
    for name, t in {"q_nope": q_nope, **got}.items():
        if t.dtype != torch.bfloat16:
            raise ValueError(f"{name} must be bfloat16, got {t.dtype}")
    return B, L, H, DC, DR, DN, DV


def softmax_scale(DN: int, DR: int) -> float:
    """``1 / sqrt(DN + DR)``: the query-key head dimension is the no-rope part plus the rope part."""
    return 1.0 / math.sqrt(DN + DR)


def reference(
    q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor
) -> torch.Tensor:
    """Eager MLA decode as DeepSeek's modeling code writes it (the non-absorbed path): up-project, then attend.

    Per chunk of sequences: ``k_nope`` and ``v`` from the latent cache by two bfloat16 GEMMs (as
    ``kv_b_proj`` does), the key as ``cat(k_nope, k_pe)`` over heads, bfloat16 ``q @ k^T`` times the
    scale, softmax in float32 cast back to bfloat16, and ``@ v``. The chunks only bound memory (as
    model code does when it must): the whole batch's up-projected key and value would not fit.
    Returns ``o``: a new contiguous bfloat16 ``[B, H, DV]``.
    """
    B, L, H, DC, DR, DN, DV = _check(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv)
    scale = softmax_scale(DN, DR)
    w_k = w_uk.reshape(H * DN, DC)  # kv_b_proj's key rows: k_nope = kv_c @ w_k^T
    w_v = w_uv.permute(1, 0, 2).reshape(DC, H * DV)  # v = kv_c @ w_v
    q = torch.cat([q_nope, q_pe], dim=-1).unsqueeze(2)  # [B, H, 1, DN + DR]
    o = torch.empty((B, H, DV), dtype=torch.bfloat16, device=q_nope.device)
    per_seq = L * H * (DN + DV + 3 * (DN + DR)) * 2  # k_nope, v, the key and its fp32 copy, bytes per sequence
    chunk = max(1, REFERENCE_CHUNK_BYTES // per_seq)
    for b0 in range(0, B, chunk):
        b1 = min(B, b0 + chunk)
        c = kv_c[b0:b1]
        k_nope = (c @ w_k.T).view(b1 - b0, L, H, DN).transpose(1, 2)  # [c, H, L, DN]
        v = (c @ w_v).view(b1 - b0, L, H, DV).transpose(1, 2)  # [c, H, L, DV]
        k_rot = k_pe[b0:b1].unsqueeze(1).expand(b1 - b0, H, L, DR)
        k = torch.cat([k_nope, k_rot], dim=-1)  # [c, H, L, DN + DR]
        scores = torch.matmul(q[b0:b1].float(), k.float().transpose(2, 3)) * scale  # [c, H, 1, L], fp32 logits
        p = torch.softmax(scores, dim=-1, dtype=torch.float32).to(torch.bfloat16)
        o[b0:b1] = torch.matmul(p, v).squeeze(2)
    return o


def exact(
    q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor
) -> torch.Tensor:
    """Float64 oracle, the absorbed form: ``q_lat = w_uk^T q_nope``, attention over the latent, ``w_uv^T o_lat``.

    Loops over chunks of sequences so the float64 cache copy stays under ``EXACT_CHUNK_BYTES``.
    Returns a float64 ``[B, H, DV]``.
    """
    B, L, H, DC, DR, DN, DV = _check(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv)
    scale = softmax_scale(DN, DR)
    f = torch.float64
    q_lat = torch.einsum("bhn,hnc->bhc", q_nope.to(f), w_uk.to(f))
    qp = q_pe.to(f)
    wv = w_uv.to(f)
    o = torch.empty((B, H, DV), dtype=f, device=q_nope.device)
    chunk = max(1, EXACT_CHUNK_BYTES // (L * (DC + DR) * 8))
    for b0 in range(0, B, chunk):
        b1 = min(B, b0 + chunk)
        c = kv_c[b0:b1].to(f)
        s = (torch.einsum("bhc,blc->bhl", q_lat[b0:b1], c) + torch.einsum("bhr,blr->bhl", qp[b0:b1], k_pe[b0:b1].to(f))) * scale
        p = torch.softmax(s, dim=-1)
        o[b0:b1] = torch.einsum("bhc,hcv->bhv", torch.einsum("bhl,blc->bhc", p, c), wv)
    return o


def exact_unabsorbed(
    q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor
) -> torch.Tensor:
    """Float64, the reference's (up-projected) form; for tests on small shapes only (it holds [B, L, H, *])."""
    B, L, H, _, DR, DN, _ = _check(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv)
    f = torch.float64
    c = kv_c.to(f)
    k_nope = torch.einsum("blc,hnc->bhln", c, w_uk.to(f))
    v = torch.einsum("blc,hcv->bhlv", c, w_uv.to(f))
    k = torch.cat([k_nope, k_pe.to(f).unsqueeze(1).expand(B, H, L, DR)], dim=-1)
    q = torch.cat([q_nope, q_pe], dim=-1).to(f)
    p = torch.softmax(torch.einsum("bhd,bhld->bhl", q, k) * softmax_scale(DN, DR), dim=-1)
    return torch.einsum("bhl,bhlv->bhv", p, v)
