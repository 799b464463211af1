"""Reference semantics for the ``mamba2_ssd`` task.

Mamba-2's selective state-space layer (Dao & Gu 2024, "state space duality"): per batch row and head ``h``
a state ``S [P, N]`` (fp32, zero at the start) runs over the sequence::

    a_t = exp(dt[t, h] * A[h])                                   (a decay in (0, 1): A < 0, dt > 0)
    S_t = a_t * S_{t-1} + dt[t, h] * x[t, h, :]^T Bm[t, g(h), :]  (an outer product, [P, N])
    y[t, h, :] = S_t @ Cm[t, g(h), :] + D[h] * x[t, h, :]

with ``g(h) = h // (H // G)``: the ``G`` groups of ``Bm`` and ``Cm`` are shared by ``H / G`` heads each. The
outputs are ``y`` (bfloat16, like ``x``) and the state after the last step, ``final_state`` (fp32
``[B, H, P, N]``): a prefill hands it to the decoder.

``reference()`` is the chunked ("SSD") form that eager Mamba-2 code (``ssd_minimal``, Hugging Face's
``torch_forward``) writes, vectorised over batch, groups and heads, in fp32 from the bf16 inputs. The
sequence is cut into chunks of ``CHUNK`` steps (Mamba-2's ``chunk_size``, 256); with ``c = cumsum(dt A)``
inside a chunk:

1. inside a chunk the output is quadratic, like masked attention: ``y_l += sum_{s <= l} (C_l . B_s)
   exp(c_l - c_s) dt_s x_s`` (the decay matrix is ``[B, G, H/G, chunks, CHUNK, CHUNK]``);
2. each chunk's own contribution to the state: ``sum_s exp(c_last - c_s) dt_s x_s^T B_s``;
3. a Python loop over chunks carries the state: ``S <- exp(c_last) S + chunk state``;
4. the state entering a chunk reaches its outputs: ``y_l += exp(c_l) C_l . S_in``.

``exact()`` is the same chunked computation in float64 (shorter chunks: less memory), the oracle; ``scan()`` is
the step-by-step recurrence in float64, for tests on tiny shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

CHUNK = 256  # Mamba-2's chunk_size
EXACT_CHUNK = 64


def _check(
    x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor, D: torch.Tensor
) -> tuple[int, int, int, int, int, int]:
    """(B, T, H, P, G, N), or ``ValueError`` unless the inputs meet the contract."""
    if x.ndim != 4 or Bm.ndim != 4:
        raise ValueError(f"x must be [B, T, H, P] and Bm [B, T, G, N]; got {tuple(x.shape)}, {tuple(Bm.shape)}")
    batch, T, H, P = x.shape
    G, N = Bm.shape[2:]
    if Bm.shape[:2] != (batch, T) or Cm.shape != Bm.shape or H % G != 0:
        raise ValueError(f"Bm and Cm must be [B, T, G, N] with G dividing H; got {tuple(Bm.shape)}, {tuple(Cm.shape)}")
    if dt.shape != (batch, T, H) or A.shape != (H,) or D.shape != (H,):
        raise ValueError(f"dt must be [B, T, H], A and D [H]; got {tuple(dt.shape)}, {tuple(A.shape)}, {tuple(D.shape)}")
    if x.dtype != torch.bfloat16 or Bm.dtype != torch.bfloat16 or Cm.dtype != torch.bfloat16:
        raise ValueError("x, Bm and Cm must be bfloat16")
    if dt.dtype != torch.float32 or A.dtype != torch.float32 or D.dtype != torch.float32:
        raise ValueError("dt, A and D must be float32")
    return batch, T, H, P, G, N


def _chunked(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    D: torch.Tensor,
    chunk: int,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The SSD chunked form in ``dtype``: (y [B, T, H, P], final_state [B, H, P, N]), both in ``dtype``."""
    batch, T, H, P, G, N = _check(x, dt, A, Bm, Cm, D)
    R = H // G  # heads per group
    pad = (-T) % chunk
    nc = (T + pad) // chunk
    dtp, xp, Bp, Cp = dt.to(dtype), x.to(dtype), Bm.to(dtype), Cm.to(dtype)
    if pad:  # padded steps have dt = 0: no decay, no input, so the final state is unchanged
        dtp, xp = F.pad(dtp, (0, 0, 0, pad)), F.pad(xp, (0, 0, 0, 0, 0, pad))
        Bp, Cp = F.pad(Bp, (0, 0, 0, 0, 0, pad)), F.pad(Cp, (0, 0, 0, 0, 0, pad))
    # chunked views: heads split as [G, R]; everything laid out [batch, G, R, chunk, step, ...]
    xdt = (xp * dtp[..., None]).view(batch, nc, chunk, G, R, P).permute(0, 3, 4, 1, 2, 5)  # dt folded into x
    Bc = Bp.view(batch, nc, chunk, G, N).permute(0, 3, 1, 2, 4)  # [b, g, c, l, n]
    Cc = Cp.view(batch, nc, chunk, G, N).permute(0, 3, 1, 2, 4)
    dA = (dtp * A.to(dtype)).view(batch, nc, chunk, G, R).permute(0, 3, 4, 1, 2)  # [b, g, r, c, l]
    cs = dA.cumsum(-1)

    # 1. inside each chunk: (C_l . B_s) exp(c_l - c_s) for s <= l, times dt_s x_s
    later = torch.ones(chunk, chunk, dtype=torch.bool, device=x.device).triu(1)
    decay = (cs[..., :, None] - cs[..., None, :]).masked_fill_(later, float("-inf")).exp_()  # [b, g, r, c, l, s]
    scores = Cc @ Bc.transpose(-1, -2)  # [b, g, c, l, s]: shared by the group's heads
    y = decay.mul_(scores[:, :, None]) @ xdt  # [b, g, r, c, l, p]
    del decay

    # 2. each chunk's state, decayed to the chunk's end: sum_s exp(c_last - c_s) dt_s x_s^T B_s
    to_end = torch.exp(cs[..., -1:] - cs)  # [b, g, r, c, l]
    states = torch.einsum("bgrclp,bgcln->bgrcpn", xdt * to_end[..., None], Bc)

    # 3. the state entering each chunk, carried across chunks
    across = torch.exp(cs[..., -1])  # [b, g, r, c]: a whole chunk's decay
    entering = torch.empty_like(states)
    state = torch.zeros_like(states[:, :, :, 0])
    for c in range(nc):
        entering[:, :, :, c] = state
        state = across[..., c, None, None] * state + states[:, :, :, c]

    # 4. the entering state read by the chunk's outputs: exp(c_l) C_l . S_in
    y += torch.einsum("bgcln,bgrcpn->bgrclp", Cc, entering) * torch.exp(cs)[..., None]
    y = y.permute(0, 3, 4, 1, 2, 5).reshape(batch, nc * chunk, H, P)[:, :T]
    y = y + D.to(dtype)[:, None] * x.to(dtype)
    return y, state.reshape(batch, H, P, N)


def reference(
    x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor, D: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager chunked SSD in fp32 (chunks of 256): ``(y, final_state)``, bfloat16 ``[B, T, H, P]`` and fp32
    ``[B, H, P, N]``, new contiguous tensors (see the module's docstring)."""
    y, state = _chunked(x, dt, A, Bm, Cm, D, CHUNK, torch.float32)
    return y.to(torch.bfloat16).contiguous(), state.contiguous()


def exact(
    x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor, D: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 oracle: the chunked form with every intermediate in float64 (chunks of 64)."""
    return _chunked(x, dt, A, Bm, Cm, D, EXACT_CHUNK, torch.float64)


def scan(
    x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor, D: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrence step by step in float64 (tests on tiny shapes): (y, final_state)."""
    batch, T, H, P, G, N = _check(x, dt, A, Bm, Cm, D)
    group = torch.arange(H, device=x.device) // (H // G)
    xd, dtd, Ad, Dd = x.double(), dt.double(), A.double(), D.double()
    Bd, Cd = Bm.double()[:, :, group], Cm.double()[:, :, group]  # [b, t, h, n]
    state = torch.zeros(batch, H, P, N, dtype=torch.float64, device=x.device)
    y = torch.empty(batch, T, H, P, dtype=torch.float64, device=x.device)
    for t in range(T):
        decay = torch.exp(dtd[:, t] * Ad)[..., None, None]
        state = decay * state + (dtd[:, t, :, None] * xd[:, t])[..., None] * Bd[:, t, :, None, :]
        y[:, t] = (state @ Cd[:, t, :, :, None]).squeeze(-1) + Dd[:, None] * xd[:, t]
    return y, state


def library(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    D: torch.Tensor,
    op: Callable[..., Any] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A library call that computes the SSD scan: flash-linear-attention's ``chunk_simple_gla`` (``fla-core``,
    Triton kernels, CUDA only), the scalar-decay linear attention that SSD is (``q = C``, ``k = B``,
    ``v = dt x``, log decay ``g = dt A``, scale 1), the groups of ``B`` and ``C`` expanded to the heads, then
    ``D x`` added. Mamba's own ``mamba_chunk_scan_combined`` (``mamba-ssm``) needs CUDA extensions built at
    install, which the GPU machine cannot do. ``op`` replaces the fla call (tests: the same contract in float64)."""
    _, _, H, _, G, _ = _check(x, dt, A, Bm, Cm, D)
    if op is None:
        from fla.ops.simple_gla import chunk_simple_gla  # noqa: PLC0415 (fla-core: on the GPU machine only)

        op = chunk_simple_gla
    R = H // G
    dtf = dt.float()
    o, state = op(
        Cm.repeat_interleave(R, dim=2),
        Bm.repeat_interleave(R, dim=2),
        (x.float() * dtf[..., None]).to(x.dtype),
        g=dtf * A.float(),
        scale=1.0,
        output_final_state=True,
    )
    y = o.float() + D.float()[:, None] * x.float()
    return y.to(torch.bfloat16).contiguous(), state.float().transpose(-1, -2).contiguous()
