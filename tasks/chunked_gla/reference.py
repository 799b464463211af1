"""Reference semantics for the ``chunked_gla`` task.

Gated linear attention with a scalar decay per head and step (GLA/RetNet/Mamba-2-style "simple GLA"): per
batch row ``b`` and head ``h``, a ``[D, D]`` state carried over the sequence, zero at the start::

    S_t = exp(g_t) S_{t-1} + k_t^T v_t          (k_t, v_t, q_t rows of [T, D]; g_t <= 0 the log decay)
    o_t = scale * q_t S_t                        (scale = D^-0.5)

so ``o_t = scale * sum_{j <= t} exp(g_{j+1} + ... + g_t) (q_t . k_j) v_j``: step ``t`` sees itself undecayed
and every earlier step decayed by the product of the gates in between. Returns ``o`` (bfloat16
``[B, H, T, D]``) and the final state ``S_T`` (float32 ``[B, H, D, D]``), as fla's ``chunk_simple_gla``
does with ``output_final_state=True`` (the state a prefill hands to decoding).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

CHUNK: int = 64  # the reference's chunk length (the algebra is exact for any chunk length)
STEP_BLOCK: int = 16  # steps per compared block of o (``steps``)


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if q.ndim != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k and v must all be [B, H, T, D], got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if q.dtype != torch.bfloat16 or k.dtype != torch.bfloat16 or v.dtype != torch.bfloat16:
        raise ValueError("q, k and v must be bfloat16")
    if g.dtype != torch.float32 or tuple(g.shape) != tuple(q.shape[:3]):
        raise ValueError(f"g must be float32 [B, H, T], got {g.dtype} {tuple(g.shape)}")


def chunked(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, dtype: torch.dtype, chunk: int = CHUNK
) -> tuple[torch.Tensor, torch.Tensor]:
    """The chunked form in ``dtype`` (``o`` and the final state, both in ``dtype``).

    Per chunk ``[c0, c1)`` with the chunk-local cumulative gate ``G_i = g_c0 + ... + g_i``:

    * intra-chunk: ``A_ij = scale (q_i . k_j) exp(G_i - G_j)`` for ``j <= i`` (0 above the diagonal),
      ``o_i = sum_j A_ij v_j``;
    * inter-chunk: ``o_i += scale exp(G_i) q_i S`` with ``S`` the state at the chunk's start;
    * state passing: ``S <- exp(G_last) S + sum_j exp(G_last - G_j) k_j^T v_j``.

    Every exponent is a difference ``G_i - G_j <= 0`` or ``G <= 0`` (never ``exp(-G)``), so nothing
    overflows however strong the decay. A Python loop over the chunks carries the state.
    """
    B, H, T, D = q.shape
    scale = D**-0.5
    qf, kf, vf, gf = q.to(dtype) * scale, k.to(dtype), v.to(dtype), g.to(dtype)
    state = torch.zeros((B, H, D, D), dtype=dtype, device=q.device)
    o = torch.empty((B, H, T, D), dtype=dtype, device=q.device)
    for c0 in range(0, T, chunk):
        c1 = min(T, c0 + chunk)
        qc, kc, vc = qf[:, :, c0:c1], kf[:, :, c0:c1], vf[:, :, c0:c1]
        G = gf[:, :, c0:c1].cumsum(dim=-1)  # [B, H, L]: the chunk-local cumulative log decay
        L = c1 - c0
        causal = torch.ones((L, L), dtype=torch.bool, device=q.device).tril()
        decay = (G[..., :, None] - G[..., None, :]).masked_fill(~causal, float("-inf")).exp()  # [B, H, L, L]
        attn = torch.matmul(qc, kc.transpose(-1, -2)) * decay
        o[:, :, c0:c1] = torch.matmul(attn, vc) + torch.matmul(qc * G.exp()[..., None], state)
        last = G[..., -1:]  # [B, H, 1]
        state = state * last.exp()[..., None] + torch.matmul((kc * (last - G).exp()[..., None]).transpose(-1, -2), vc)
    return o, state


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The chunked form as model code writes it (as fla's ``torch_simple_gla`` does): chunks of 64,
    float32 from the bfloat16 inputs, the intra-chunk decay mask as an ``[L, L]`` matrix per head, a Python
    loop over the chunks carrying the float32 state.

    ``q``, ``k``, ``v``: bfloat16 ``[B, H, T, D]``; ``g``: float32 ``[B, H, T]`` (log decays, <= 0). Returns
    ``(o, final_state)``: a new contiguous bfloat16 ``[B, H, T, D]`` and a new float32 ``[B, H, D, D]``.
    """
    _check(q, k, v, g)
    o, state = chunked(q, k, v, g, torch.float32)
    return o.to(torch.bfloat16), state


def exact(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 oracle: the same chunked algebra in float64 (exact algebra for any chunk length; a test checks
    it against the step-by-step recurrence). Returns float64 ``(o, final_state)``."""
    _check(q, k, v, g)
    return chunked(q, k, v, g, torch.float64)


def steps(outputs: dict[str, torch.Tensor], inputs: dict[str, object]) -> dict[str, torch.Tensor]:
    """The compared values (``tolerance.views``): ``o`` in blocks of ``STEP_BLOCK`` consecutive steps of one
    head, each its own ``[STEP_BLOCK, D]`` matrix (the last block of a head zero-padded when ``T`` is not a
    multiple); ``final_state`` as it is, one ``[D, D]`` matrix per head.

    Per block rather than per head, so that an error confined to a few steps (a chunk boundary, the first
    steps of a chunk) is not averaged over a head's ``T`` rows; per block rather than per row, so that a
    row whose value is a single small product (step 0: ``scale (q_0 . k_0) v_0``, or every step of a head
    whose decay wipes the state) is judged beside its neighbours instead of by the rounding of one dot
    product that cancels. The zero padding adds nothing to either side of the comparison.
    """
    o = outputs["o"]
    B, H, T, D = o.shape
    pad = -T % STEP_BLOCK
    if pad:
        o = torch.cat([o, o.new_zeros((B, H, pad, D))], dim=2)
    return {"o": o.reshape(-1, STEP_BLOCK, D), "final_state": outputs["final_state"]}


def library(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, op: Callable[..., Any] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The library call a practitioner has instead (task.toml ``[library]``): flash-linear-attention's
    ``chunk_simple_gla`` (``fla-core``, Triton kernels, CUDA only). It takes ``[B, T, H, D]``: the inputs are
    transposed into that layout and ``o`` back (copies a model keeping fla's layout would not make, counted in
    its time). ``op`` replaces the fla call (tests: the same contract in float64 on the CPU)."""
    _check(q, k, v, g)
    if op is None:
        from fla.ops.simple_gla import chunk_simple_gla  # noqa: PLC0415 (fla-core: on the GPU machine only)

        op = chunk_simple_gla
    D = q.shape[-1]
    o, state = op(
        q.transpose(1, 2).contiguous(),
        k.transpose(1, 2).contiguous(),
        v.transpose(1, 2).contiguous(),
        g=g.transpose(1, 2).contiguous(),
        scale=D**-0.5,
        output_final_state=True,
    )
    return o.transpose(1, 2).to(torch.bfloat16).contiguous(), state.float().contiguous()
