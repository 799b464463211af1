"""Reference semantics for the ``w4a16_gemm`` task.

A weight-only int4 linear layer (W4A16): bfloat16 activations ``x [M, K]`` times a weight
``W [K, N]`` stored as 4-bit codes in GPTQ's packed layout (inputs.py has the bit-level details)::

    q[k, n] = bits 4 (k % 8) .. 4 (k % 8) + 3 of qweight[k // 8, n]
    z[g, n] = bits 4 (n % 8) .. 4 (n % 8) + 3 of qzeros[g, n // 8]
    W[k, n] = (q[k, n] - z[k // 128, n]) * scales[k // 128, n]
    y       = x @ W                                   # bfloat16 [M, N]

``reference()`` is what the torch fallback of GPTQ/AWQ model code does: unpack the codes with
vectorised shifts and masks, dequantise to a bfloat16 ``[K, N]`` copy of the weight, then one
matmul. ``exact()`` is the same arithmetic in float64 (the correctness oracle).
"""

from __future__ import annotations

import torch

GROUP = 128
PACK = 8


def _check(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, qzeros: torch.Tensor) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if x.ndim != 2 or qweight.ndim != 2:
        raise ValueError(f"x must be [M, K] and qweight [K/8, N], got {tuple(x.shape)} and {tuple(qweight.shape)}")
    K, N = x.shape[1], qweight.shape[1]
    if K % GROUP or N % PACK or qweight.shape[0] * PACK != K:
        raise ValueError(
            f"need K % {GROUP} == 0, N % {PACK} == 0 and qweight [K/8, N]; got K={K}, qweight {tuple(qweight.shape)}"
        )
    if scales.shape != (K // GROUP, N) or qzeros.shape != (K // GROUP, N // PACK):
        raise ValueError(f"scales must be [K/128, N] and qzeros [K/128, N/8], got {tuple(scales.shape)}, {tuple(qzeros.shape)}")
    if x.dtype != torch.bfloat16 or scales.dtype != torch.bfloat16:
        raise ValueError("x and scales must be bfloat16")
    if qweight.dtype != torch.int32 or qzeros.dtype != torch.int32:
        raise ValueError("qweight and qzeros must be int32")


def unpack_nibbles(words: torch.Tensor, dim: int) -> torch.Tensor:
    """Unpack int32 words into their eight 4-bit codes (int8, [0, 15]) along ``dim``, lowest nibble first.

    Shift every word by 0, 4, ..., 28 bits (the arithmetic shift of a negative word only changes bits
    above the nibble), narrow to int8 and keep the low four bits: word ``j`` gives elements
    ``8 j .. 8 j + 7`` of ``dim``.
    """
    shifts = torch.arange(0, 4 * PACK, 4, dtype=torch.int32, device=words.device)
    view = [1] * (words.ndim + 1)
    view[dim + 1] = PACK
    codes = (words.unsqueeze(dim + 1) >> shifts.view(view)).to(torch.int8).bitwise_and_(15)
    shape = list(words.shape)
    shape[dim] *= PACK
    return codes.reshape(shape)


def reference(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, qzeros: torch.Tensor) -> torch.Tensor:
    """Eager PyTorch W4A16 matmul as GPTQ/AWQ fallback code writes it.

    ``x``: bfloat16 ``[M, K]``; ``qweight``: int32 ``[K/8, N]``; ``scales``: bfloat16 ``[K/128, N]``;
    ``qzeros``: int32 ``[K/128, N/8]``. Returns a new contiguous bfloat16 ``[M, N]``.
    The dequantised weight is materialised in bfloat16 (one rounding of ``(q - z) * s``) and the
    matmul accumulates in float32 (cuBLAS).
    """
    _check(x, qweight, scales, qzeros)
    K, N = x.shape[1], qweight.shape[1]
    G = K // GROUP
    q = unpack_nibbles(qweight, 0).view(G, GROUP, N)  # int8 codes
    z = unpack_nibbles(qzeros, 1).view(G, 1, N)
    w = (q - z) * scales.view(G, 1, N)  # int8 * bfloat16 -> bfloat16
    return (x @ w.view(K, N)).contiguous()


def exact(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, qzeros: torch.Tensor) -> torch.Tensor:
    """Float64 oracle: the same dequantisation and product with every value in float64 (output float64)."""
    _check(x, qweight, scales, qzeros)
    K, N = x.shape[1], qweight.shape[1]
    G = K // GROUP
    q = unpack_nibbles(qweight, 0).view(G, GROUP, N).double()
    z = unpack_nibbles(qzeros, 1).view(G, 1, N).double()
    w = (q - z) * scales.double().view(G, 1, N)
    return x.double() @ w.view(K, N)
