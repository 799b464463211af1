"""Emulated designs of splitk_gemm's false-failure study (false_failure.toml): float64 products, rounded to
bfloat16 as a kernel stores c."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

SPLIT_DEPTH = 64  # the K-tail design's split depth
ROW_TILE = 16  # the padded-rows design's row tile
SPLITS = 4  # the bfloat16-partials designs' K ranges
K_STEP = 64  # the bfloat16 accumulator's K step


def _bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).double()


def _part(a: torch.Tensor, w: torch.Tensor, lo: int = 0, hi: int | None = None) -> torch.Tensor:
    """a[:, lo:hi] @ w[:, lo:hi].T in float64."""
    return a[:, lo:hi].double() @ w[:, lo:hi].double().T


def _ranges(K: int, splits: int) -> list[tuple[int, int]]:
    span = -(-K // splits)
    return [(lo, min(K, lo + span)) for lo in range(0, K, span)]


def _computed(a: torch.Tensor, w: torch.Tensor, design: str) -> torch.Tensor:
    M, K = a.shape
    if design == "k_tail_dropped":
        return _part(a, w, 0, K // SPLIT_DEPTH * SPLIT_DEPTH)
    if design == "weight_transposed":
        return a.double() @ w.reshape(K, w.shape[0]).double()
    if design == "tile_rows_past_m":  # two K ranges; the second's partials read shifted by M's padding (zeros first)
        (lo0, hi0), (lo1, hi1) = _ranges(K, 2)
        pad = -(-M // ROW_TILE) * ROW_TILE - M
        shifted = torch.cat([torch.zeros((pad, w.shape[0]), dtype=torch.float64), _part(a, w, lo1, hi1)])[:M]
        return _part(a, w, lo0, hi0) + shifted
    acc = torch.zeros((M, w.shape[0]), dtype=torch.float64)
    if design == "bf16_partials":
        return sum((_bf16(_part(a, w, lo, hi)) for lo, hi in _ranges(K, SPLITS)), acc)
    if design == "bf16_partials_bf16_sum":
        for lo, hi in _ranges(K, SPLITS):
            acc = _bf16(acc + _bf16(_part(a, w, lo, hi)))
        return acc
    if design == "bf16_accumulator":
        for lo in range(0, K, K_STEP):
            acc = _bf16(acc + _part(a, w, lo, lo + K_STEP))
        return acc
    raise ValueError(f"unknown design {design!r}")


def product(ref: ModuleType, d: dict[str, Any], *, design: str) -> torch.Tensor:
    return _computed(d["a"], d["w"], design).to(torch.bfloat16)
