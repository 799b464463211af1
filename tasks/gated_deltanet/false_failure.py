"""Emulated designs of gated_deltanet's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

Outputs = tuple[torch.Tensor, torch.Tensor]
CHUNK = 16


def chunked(ref: ModuleType, made: dict[str, Any], *, flaw: str) -> Outputs:
    """The chunked form in float64 with one flaw: ``no_carry``, ``no_intra_decay`` (the chunk's whole decay applied
    to the entering state, none inside), ``strict_output``, ``beta_on_v_only`` or ``first_order``."""
    q, k, v, g, beta = (made[n] for n in ("q", "k", "v", "g", "beta"))
    B, H, T, D = q.shape
    qn, kn = ref._l2norm(q.double()) * D**-0.5, ref._l2norm(k.double())
    vv, gg, bb = v.double(), g.double(), beta.double()
    state = torch.zeros((B, H, D, D), dtype=torch.float64)
    o = torch.empty((B, H, T, D), dtype=torch.float64)
    for start in range(0, T, CHUNK):
        part = slice(start, min(T, start + CHUNK))
        n = part.stop - part.start
        q_c, k_c, v_c, g_c, b_c = qn[:, :, part], kn[:, :, part], vv[:, :, part], gg[:, :, part].cumsum(-1), bb[:, :, part]
        if flaw == "no_carry":
            state = torch.zeros_like(state)
        if flaw == "no_intra_decay":
            state = state * g_c[..., -1:].exp().unsqueeze(-1)
            g_c = torch.zeros_like(g_c)
        last = g_c[..., -1:]
        keep = torch.ones((n, n), dtype=torch.bool).tril(-1 if flaw == "strict_output" else 0)
        decay = (g_c.unsqueeze(-1) - g_c.unsqueeze(-2)).masked_fill(~keep, float("-inf")).exp()
        k_w = k_c if flaw == "beta_on_v_only" else k_c * b_c.unsqueeze(-1)
        a = ((k_w @ k_c.transpose(-1, -2)) * (g_c.unsqueeze(-1) - g_c.unsqueeze(-2)).exp()).tril(-1)
        eye = torch.eye(n, dtype=torch.float64)
        t = eye - a if flaw == "first_order" else torch.linalg.inv(eye + a)
        v_new = t @ (v_c * b_c.unsqueeze(-1)) - (t @ (k_w * g_c.exp().unsqueeze(-1))) @ state
        o[:, :, part] = (q_c * g_c.exp().unsqueeze(-1)) @ state + ((q_c @ k_c.transpose(-1, -2)) * decay) @ v_new
        state = state * last.exp().unsqueeze(-1) + (k_c * (last - g_c).exp().unsqueeze(-1)).transpose(-1, -2) @ v_new
    return o.to(torch.bfloat16), state


def _bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).float()


def expert_numerics(ref: ModuleType, made: dict[str, Any], chunk: int = 64) -> Outputs:
    """The expert's dataflow in torch: float32 arithmetic, its operands rounded to bfloat16 where it rounds them."""
    q, k, v, g, beta = (made[n] for n in ("q", "k", "v", "g", "beta"))
    B, H, T, D = q.shape
    qn, kn = ref._l2norm(q.float()) * D**-0.5, ref._l2norm(k.float())
    state = torch.zeros((B, H, D, D))
    o = torch.empty((B, H, T, D))
    for start in range(0, T, chunk):
        part = slice(start, min(T, start + chunk))
        n = part.stop - part.start
        q_c, k_c, g_c, b_c = qn[:, :, part], kn[:, :, part], g[:, :, part].float().cumsum(-1), beta[:, :, part].float()
        diff = g_c.unsqueeze(-1) - g_c.unsqueeze(-2)
        lower = torch.ones((n, n), dtype=torch.bool).tril()
        strict = lower.tril(-1)
        a = b_c.unsqueeze(-1) * (_bf16(k_c) @ _bf16(k_c).transpose(-1, -2)) * diff.masked_fill(~strict, float("-inf")).exp()
        t = _bf16(torch.linalg.inv(torch.eye(n) + a))
        w = _bf16(t @ _bf16(k_c * (b_c * g_c.exp()).unsqueeze(-1)))
        u = _bf16(t @ _bf16(v[:, :, part].float() * b_c.unsqueeze(-1)))
        entering = _bf16(state)
        v_new = _bf16(u - w @ entering)
        scores = _bf16((_bf16(q_c) @ _bf16(k_c).transpose(-1, -2)) * diff.masked_fill(~lower, float("-inf")).exp())
        o[:, :, part] = _bf16(q_c * g_c.exp().unsqueeze(-1)) @ entering + scores @ v_new
        last = g_c[..., -1:]
        state = state * last.exp().unsqueeze(-1) + _bf16(k_c * (last - g_c).exp().unsqueeze(-1)).transpose(-1, -2) @ v_new
    return o.to(torch.bfloat16), state
