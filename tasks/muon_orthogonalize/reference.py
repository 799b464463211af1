"""Reference semantics for the ``muon_orthogonalize`` task.

The operator is the Muon optimizer's orthogonalisation step with the five
Polar Express coefficient triples: normalise each matrix by its Frobenius
norm, then apply five odd matrix polynomials ``X <- a X + (b A + c A^2) X``
with ``A = X X^T``.
"""

from __future__ import annotations

import math

import torch

COEFFS: tuple[tuple[float, float, float], ...] = (
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
)
"""The five Polar Express (a, b, c) triples, applied in this order."""

STEPS: int = len(COEFFS)
NORM_SCALE: float = 1.01
NORM_EPS: float = 1e-7


def _check(G: torch.Tensor, steps: int) -> None:
    """Raise ``ValueError`` unless ``G`` and ``steps`` meet the contract."""
    if steps != STEPS:
        raise ValueError(f"steps must be {STEPS} (one per Polar Express triple), got {steps}")
    if G.ndim != 3:
        raise ValueError(f"G must be 3-D [B, M, N], got shape {tuple(G.shape)}")
    if G.dtype != torch.bfloat16:
        raise ValueError(f"G must be bfloat16, got {G.dtype}")
    if G.shape[1] > G.shape[2]:
        raise ValueError(f"G must have M <= N, got M={G.shape[1]}, N={G.shape[2]}")


def _normalise(G: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Divide each matrix by (its Frobenius norm * 1.01 + 1e-7), computed in ``dtype``."""
    X = G.to(dtype)
    norm = torch.linalg.matrix_norm(X, ord="fro", keepdim=True)
    return X / (norm * NORM_SCALE + NORM_EPS)


def _iterate(X: torch.Tensor) -> torch.Tensor:
    """Apply the five polynomial steps in X's own dtype."""
    for a, b, c in COEFFS:
        A = X @ X.mT
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    return X


def reference(G: torch.Tensor, steps: int) -> torch.Tensor:
    """Float16 reference: fp32 normalisation, then five steps as float16 torch ops.

    ``G`` is a contiguous bfloat16 tensor ``[B, M, N]`` with ``M <= N`` and
    ``steps`` must be 5. Returns a new contiguous float16 tensor ``[B, M, N]``.
    """
    _check(G, steps)
    X = _normalise(G, torch.float32).to(torch.float16)
    return _iterate(X).contiguous()


def exact_float64(G: torch.Tensor, steps: int) -> torch.Tensor:
    """The same normalisation and five steps, all in float64."""
    _check(G, steps)
    return _iterate(_normalise(G, torch.float64)).contiguous()


def _split_tf32(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Float32 ``x`` as high + low: high keeps TF32's 10 stored significand bits, low = x - high (exact)."""
    high = (x.view(torch.int32) & -8192).view(torch.float32)
    return high, x - high


def _product3(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """a @ b as three TF32 tensor-core products of the parts (low x low dropped), accumulated in float32."""
    return a[0] @ b[0] + (a[0] @ b[1] + a[1] @ b[0])


def exact_tf32x3(G: torch.Tensor, steps: int) -> torch.Tensor:
    """Float64 normalisation, then the five steps in float32 with every product as three TF32 products
    (about twice as fast as float64 on an H200; docs/tolerance-muon.md bounds what it costs the check)."""
    _check(G, steps)
    X = _normalise(G, torch.float64).to(torch.float32)
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        for a, b, c in COEFFS:
            x = _split_tf32(X)
            A = _product3(x, (x[0].mT, x[1].mT))
            a_parts = _split_tf32(A)
            B = b * A + c * _product3(a_parts, a_parts)
            X = a * X + _product3(_split_tf32(B), x)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return X.contiguous()


F16_TOP: float = 2.0**14
"""Each matrix is scaled by a power of two that brings its largest element into [F16_TOP, 2 F16_TOP): float16
holds it (to 65504) and the low parts of elements down to 2^-17 of it stay normal numbers."""


def _split_f16(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float32 matrices ``x [..., r, c]`` as float16 ``high + low`` of ``x * scale``, per matrix a power of two
    (exact): ``high`` keeps 11 significant bits, ``low`` the next 11, as TF32's two parts do. Returns
    ``(high, low, scale)``."""
    top = x.abs().amax(dim=(-2, -1), keepdim=True).clamp_min(torch.finfo(torch.float32).tiny)
    scale = torch.exp2(math.log2(F16_TOP) - torch.floor(torch.log2(top)))
    scaled = x * scale
    high = scaled.to(torch.float16)
    return high, (scaled - high.float()).to(torch.float16), scale


def _mm_f32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Float16 ``a @ b`` (batched) with float32 results: the GPU's tensor cores accumulate in float32 (cuBLAS with
    a float32 output); on the CPU the same products in float32 (a float16 value is exact in float32)."""
    if a.is_cuda:
        return torch.bmm(a, b, out_dtype=torch.float32)
    return torch.bmm(a.float(), b.float())


def _product_f16x3(
    a: tuple[torch.Tensor, torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
) -> torch.Tensor:
    """``a @ b`` from float16 parts (``_split_f16``): three products (low x low dropped), float32, unscaled."""
    product = _mm_f32(a[0], b[0]) + (_mm_f32(a[0], b[1]) + _mm_f32(a[1], b[0]))
    return product / (a[2] * b[2])


def _transposed(parts: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return parts[0].mT, parts[1].mT, parts[2]


def exact_f16x3(G: torch.Tensor, steps: int) -> torch.Tensor:
    """Float64 normalisation, then the five steps in float32 with every product as three float16 tensor-core
    products of scaled high and low parts (22 significant bits, as ``exact_tf32x3``), at twice TF32's rate on
    a Hopper GPU. Its distance from float64 at the registered shapes is measured by
    ``scripts/muon_oracle_precision.py`` (docs/tolerance-muon.md)."""
    _check(G, steps)
    X = _normalise(G, torch.float64).to(torch.float32)
    for a, b, c in COEFFS:
        x = _split_f16(X)
        A = _product_f16x3(x, _transposed(x))
        a_parts = _split_f16(A)
        B = b * A + c * _product_f16x3(a_parts, a_parts)
        X = a * X + _product_f16x3(_split_f16(B), x)
    return X.contiguous()


EXACT_CHUNK_ELEMENTS: int = 1 << 27
"""Elements of ``G`` per chunk of ``exact()``: its float32/float64 scratch (a handful of copies of the chunk)
stays a few GiB however large the batch (the whole b32 4096x11008 batch at once needed over 40 GiB)."""


def exact(G: torch.Tensor, steps: int) -> torch.Tensor:
    """The oracle: on a GPU float32 from three TF32 products per matrix product (``exact_tf32x3``), on the
    CPU float64 (``exact_float64``), a chunk of whole matrices at a time."""
    _check(G, steps)
    one = exact_tf32x3 if G.is_cuda else exact_float64
    per_chunk = max(1, EXACT_CHUNK_ELEMENTS // (G.shape[1] * G.shape[2]))
    if G.shape[0] <= per_chunk:
        return one(G, steps)
    X = torch.empty(G.shape, dtype=torch.float32 if G.is_cuda else torch.float64, device=G.device)
    for start in range(0, G.shape[0], per_chunk):
        X[start : start + per_chunk] = one(G[start : start + per_chunk], steps)
    return X
