"""Comparing a solution's output with the oracle under a task's tolerance, NaN/Inf-aware.

The comparison runs in float64 over bounded blocks of the outputs (`CHUNK_ELEMENTS` at a time), so its
scratch memory does not grow with the workload: a whole-tensor float64 copy of a 1.4-billion-element
output would be 11 GiB per copy, and the comparison needs several.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from workbench.catalog.task import CompareRule

CHUNK_ELEMENTS = 1 << 24  # elements compared at once: about 128 MiB per float64 temporary


@dataclass(frozen=True)
class Comparison:
    ok: bool
    max_abs_err: float
    rel_err: float  # the worst per-matrix relative Frobenius error (the mean, for aggregate="mean")
    bound: float | None  # the bound that rel_err was held to (per-matrix rules only)
    message: str


def _per_matrix(t: torch.Tensor) -> torch.Tensor:
    """The values as [matrices, elements of one matrix] (the last two dims; a vector or scalar is one)."""
    if t.ndim >= 2:
        return t.reshape(-1, t.shape[-2] * t.shape[-1])
    return t.reshape(1, -1)


def _blocks(rows: int, cols: int, chunk: int) -> Iterator[tuple[slice, slice]]:
    """Blocks of a [rows, cols] view of at most about `chunk` elements: whole rows where a row fits."""
    if cols <= chunk:
        step = max(1, chunk // max(cols, 1))
        for r in range(0, rows, step):
            yield slice(r, min(rows, r + step)), slice(0, cols)
        return
    for r in range(rows):
        for c in range(0, cols, chunk):
            yield slice(r, r + 1), slice(c, min(cols, c + chunk))


@dataclass
class _Sums:
    """Per-matrix sums of squares and the elementwise findings, accumulated block by block (float64)."""

    diff_sq: torch.Tensor
    scale_sq: torch.Tensor
    ref_sq: torch.Tensor | None
    bad: int = 0  # values NaN or Inf where the oracle's are finite
    max_abs: torch.Tensor | None = None
    over: int = 0  # values over atol + rtol |oracle|
    first_over: int | None = None  # flat index of the first of them

    def add(self, o: torch.Tensor, e: torch.Tensor, rows: slice, ref: torch.Tensor | None) -> None:
        self.bad += int((~torch.isfinite(o) & torch.isfinite(e)).sum())
        diff = o - e
        block_max = diff.abs().amax() if diff.numel() else None
        if block_max is not None:  # a NaN stays (amax and maximum propagate it), as the whole-tensor max did
            self.max_abs = block_max if self.max_abs is None else torch.maximum(self.max_abs, block_max)
        self.diff_sq[rows] += diff.square().sum(dim=1)
        self.scale_sq[rows] += e.square().sum(dim=1)
        if ref is not None and self.ref_sq is not None:
            self.ref_sq[rows] += (ref - e).square().sum(dim=1)


def _relative(diff_sq: torch.Tensor, scale_sq: torch.Tensor) -> torch.Tensor:
    """||out - oracle||_F / ||oracle||_F per matrix (absolute where the oracle is zero)."""
    diff, scale = diff_sq.sqrt(), scale_sq.sqrt()
    return torch.where(scale > 0, diff / scale.clamp_min(1e-300), diff)


def relative_errors(out: torch.Tensor, oracle: torch.Tensor, chunk: int = CHUNK_ELEMENTS) -> torch.Tensor:
    """Per-matrix ||out - oracle||_F / ||oracle||_F in float64 (absolute where the oracle is zero)."""
    o_all, e_all = _per_matrix(out), _per_matrix(oracle)
    zeros = torch.zeros(e_all.shape[0], dtype=torch.float64, device=oracle.device)
    sums = _Sums(zeros.clone(), zeros.clone(), None)
    rows, cols = e_all.shape
    for r, c in _blocks(rows, cols, chunk):
        sums.add(o_all[r, c].double(), e_all[r, c].double(), r, None)
    return _relative(sums.diff_sq, sums.scale_sq)


def compare(
    out: torch.Tensor,
    oracle: torch.Tensor,
    tol: CompareRule,
    reference: torch.Tensor | None = None,
    chunk: int = CHUNK_ELEMENTS,
) -> Comparison:
    o_all, e_all = _per_matrix(out), _per_matrix(oracle)
    use_ref = tol.matrix_rel_fro is not None and tol.reference_error_factor is not None and reference is not None
    r_all = _per_matrix(reference) if use_ref and reference is not None else None
    rows, cols = e_all.shape
    zeros = torch.zeros(rows, dtype=torch.float64, device=oracle.device)
    sums = _Sums(zeros.clone(), zeros.clone(), zeros.clone() if r_all is not None else None)
    elementwise = tol.atol is not None or tol.rtol is not None
    for r, c in _blocks(rows, cols, chunk):
        o, e = o_all[r, c].double(), e_all[r, c].double()
        sums.add(o, e, r, r_all[r, c].double() if r_all is not None else None)
        if elementwise and not sums.bad:
            over = ((o - e).abs() > (tol.atol or 0.0) + (tol.rtol or 0.0) * e.abs()).reshape(-1)
            count = int(over.sum())
            if count and sums.first_over is None:
                local = int(torch.nonzero(over)[0])
                width = c.stop - c.start
                sums.first_over = (r.start + local // width) * cols + c.start + local % width
            sums.over += count
    if sums.bad:
        return Comparison(False, float("inf"), float("inf"), None, f"{sums.bad} output values are NaN or Inf")
    max_abs = float(sums.max_abs) if sums.max_abs is not None else 0.0
    problems: list[str] = []
    rel = _relative(sums.diff_sq, sums.scale_sq)
    worst_rel = float(rel.max()) if rel.numel() else 0.0
    bound_at_worst: float | None = None
    if tol.matrix_rel_fro is not None:
        ref_rel = None
        if sums.ref_sq is not None:
            ref_rel = _relative(sums.ref_sq, sums.scale_sq)
            ref_rel = torch.where(torch.isfinite(ref_rel), ref_rel, torch.zeros_like(ref_rel))
        if tol.aggregate == "mean":
            worst_rel = float(rel.mean())
            bound_at_worst = tol.matrix_rel_fro
            if ref_rel is not None:
                bound_at_worst = max(bound_at_worst, tol.reference_error_factor * float(ref_rel.mean()))  # type: ignore[operator]
            if worst_rel > bound_at_worst:
                problems.append(
                    f"mean relative Frobenius error over {rel.numel()} matrices {worst_rel:.3e} exceeds the bound "
                    f"{bound_at_worst:.3e}"
                )
        else:
            bounds = torch.full_like(rel, tol.matrix_rel_fro)
            if ref_rel is not None:
                bounds = torch.maximum(bounds, tol.reference_error_factor * ref_rel)  # type: ignore[operator]
            ratio = rel / bounds
            worst = int(ratio.argmax())
            worst_rel = float(rel[worst])
            bound_at_worst = float(bounds[worst])
            failing = int((ratio > 1).sum())
            if failing:
                problems.append(
                    f"{failing} of {rel.numel()} matrices exceed the tolerance (worst: matrix {worst}, relative "
                    f"Frobenius error {worst_rel:.3e} > bound {bound_at_worst:.3e})"
                )
    if sums.over and sums.first_over is not None:
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(sums.first_over), oracle.shape))
        got, expected = float(out[index]), float(oracle[index])
        problems.append(
            f"{sums.over} of {out.numel()} values exceed atol={tol.atol or 0:g}, rtol={tol.rtol or 0:g} "
            f"(first at {list(index)}: got {got:.6g}, expected {expected:.6g})"
        )
    return Comparison(not problems, max_abs, worst_rel, bound_at_worst, "; ".join(problems))
