"""Emulated designs of paged_gqa_decode's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

PAGE = 16


def attend(ref: ModuleType, d: dict[str, Any], *, mistake: str) -> torch.Tensor:
    """The operator in float64 with one mistake: ``ignore_seq_lens``, ``identity_pages``, ``gqa_modulo``,
    ``last_split_only``, ``len_round_up`` or ``len_round_down`` (to a whole page)."""
    q, kc, vc, pt, scale = d["q"], d["k_cache"], d["v_cache"], d["page_table"], d["scale"]
    B, Hq, D = q.shape
    Hkv = kc.shape[2]
    kv_of = torch.arange(Hq) % Hkv if mistake == "gqa_modulo" else torch.arange(Hq) // (Hq // Hkv)
    lengths = d["seq_lens"].tolist()
    if mistake == "ignore_seq_lens":
        lengths = [pt.shape[1] * PAGE] * B
    elif mistake == "len_round_up":
        lengths = [(n + PAGE - 1) // PAGE * PAGE for n in lengths]
    elif mistake == "len_round_down":
        lengths = [max(PAGE, n // PAGE * PAGE) for n in lengths]
    out = torch.empty((B, Hq, D), dtype=torch.float64)
    for b in range(B):
        n = int(lengths[b])
        npg = (n + PAGE - 1) // PAGE
        if mistake == "identity_pages":
            pages = torch.arange(b * pt.shape[1], b * pt.shape[1] + npg)
        else:
            pages = pt[b, :npg].long()
        k = kc[pages].reshape(-1, Hkv, D)[:n].double()[:, kv_of]  # [n, Hq, D]
        v = vc[pages].reshape(-1, Hkv, D)[:n].double()[:, kv_of]
        if mistake == "last_split_only":  # a split design that kept only the last of two splits
            k, v = k[n // 2 :], v[n // 2 :]
        s = torch.einsum("hd,nhd->hn", q[b].double(), k) * scale
        out[b] = torch.einsum("hn,nhd->hd", torch.softmax(s, dim=-1), v)
    return out
