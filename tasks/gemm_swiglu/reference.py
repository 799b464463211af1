"""Reference semantics for the ``gemm_swiglu`` task.

The gated MLP's first half in Llama-style models: one linear layer with the gate and up projections
stacked in one weight (``gate_up_proj``, ``[2 I, K]`` in ``nn.Linear`` layout, gate rows first), then
SwiGLU::

    gate, up = (x @ w.T).chunk(2, dim=-1)     # [M, I] each
    y        = silu(gate) * up                 # silu(g) = g * sigmoid(g)

``reference()`` is what eager model code does (vLLM's and HF transformers' torch path: ``F.linear``, a
chunk, ``F.silu`` and a multiply): the matmul is cuBLAS, the whole ``[M, 2 I]`` product is written to
memory in bfloat16 and read back twice. ``exact()`` is the same arithmetic in float64 (the oracle).
``library`` is what a practitioner has instead (cuBLAS, then Liger-Kernel's fused SwiGLU), timed as a second
baseline on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

LIGER_VERSION: str = "0.8.5"  # the liger-kernel release library() calls (scripts/fetch_device_wheels.sh)


def _check(x: torch.Tensor, w: torch.Tensor) -> tuple[int, int, int]:
    """(M, K, I), or ``ValueError`` unless the inputs meet the contract."""
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1] or w.shape[0] % 2:
        raise ValueError(f"x must be [M, K] and w [2 I, K], got {tuple(x.shape)} and {tuple(w.shape)}")
    if x.dtype != torch.bfloat16 or w.dtype != torch.bfloat16:
        raise ValueError(f"x and w must be bfloat16, got {x.dtype} and {w.dtype}")
    return x.shape[0], x.shape[1], w.shape[0] // 2


def reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Eager linear + SwiGLU: ``x`` bfloat16 ``[M, K]``, ``w`` bfloat16 ``[2 I, K]`` (gate rows, then up
    rows). Returns a new contiguous bfloat16 ``[M, I]``."""
    _check(x, w)
    gate, up = F.linear(x, w).chunk(2, dim=-1)
    return F.silu(gate) * up


def library(x: torch.Tensor, w: torch.Tensor, op: Callable[..., torch.Tensor] | None = None) -> torch.Tensor:
    """The library calls a practitioner has instead (task.toml ``[library]``): the GEMM in cuBLAS
    (``F.linear``, as the reference), then Liger-Kernel's SwiGLU for a fused gate/up tensor,
    ``liger_kernel.ops.LigerFusedGateUpSiLUMulFunction`` (liger-kernel 0.8.5; what its Megatron integration
    calls on ``linear_fc1``'s ``[tokens, 2 I]`` output, gate columns first as here). Returns what ``reference``
    returns: a new contiguous bfloat16 ``[M, I]``.

    Its dataflow: cuBLAS writes the ``[M, 2 I]`` product in bfloat16 (4 M I bytes), then one Triton program per
    row reads its gate and up halves in place (no chunk copies; 4 M I bytes), computes ``silu`` of the gate in
    fp32, rounds it to bfloat16, multiplies by the up half and writes ``y`` (2 M I bytes): two launches and
    ``2 M K + 4 I K + 10 M I`` bytes, where the reference's three launches move ``2 M K + 4 I K + 14 M I``.
    ``liger_swiglu(a, b)`` (its functional API, ``LigerSiLUMulFunction``) would first copy the two strided
    halves to contiguous tensors. ``op`` replaces the Liger call (tests: the same contract elsewhere)."""
    _check(x, w)
    fused = op
    if fused is None:  # liger-kernel: on the GPU machine (a wheel carried there); its absence is the note
        from liger_kernel.ops import LigerFusedGateUpSiLUMulFunction  # noqa: PLC0415

        fused = LigerFusedGateUpSiLUMulFunction.apply
    return fused(F.linear(x, w), False)


def exact(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Float64 oracle: the same product and activation with every value in float64 (output float64)."""
    _, _, inter = _check(x, w)
    h = x.double() @ w.double().T
    gate, up = h[:, :inter], h[:, inter:]
    return gate * torch.sigmoid(gate) * up
