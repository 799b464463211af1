"""Comparing a solution's output with the oracle under a task's tolerance, NaN/Inf-aware."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from workbench.catalog.task import CompareRule


@dataclass(frozen=True)
class Comparison:
    ok: bool
    max_abs_err: float
    rel_err: float  # the worst per-matrix relative Frobenius error (the mean, for aggregate="mean")
    bound: float | None  # the bound that rel_err was held to (per-matrix rules only)
    message: str


def _per_matrix(t: torch.Tensor) -> torch.Tensor:
    if t.ndim >= 2:
        return t.reshape(-1, t.shape[-2] * t.shape[-1])
    return t.reshape(1, -1)


def relative_errors(out: torch.Tensor, oracle: torch.Tensor) -> torch.Tensor:
    """Per-matrix ||out - oracle||_F / ||oracle||_F in float64 (absolute where the oracle is zero)."""
    diff = _per_matrix(out.double() - oracle.double()).norm(dim=1)
    scale = _per_matrix(oracle.double()).norm(dim=1)
    return torch.where(scale > 0, diff / scale.clamp_min(1e-300), diff)


def compare(out: torch.Tensor, oracle: torch.Tensor, tol: CompareRule, reference: torch.Tensor | None = None) -> Comparison:
    o = out.double()
    e = oracle.double()
    bad = ~torch.isfinite(o) & torch.isfinite(e)
    if bool(bad.any()):
        count = int(bad.sum())
        return Comparison(False, float("inf"), float("inf"), None, f"{count} output values are NaN or Inf")
    max_abs = float((o - e).abs().max()) if o.numel() else 0.0
    problems: list[str] = []
    rel = relative_errors(o, e)
    worst_rel = float(rel.max()) if rel.numel() else 0.0
    bound_at_worst: float | None = None
    if tol.matrix_rel_fro is not None:
        ref_rel = None
        if tol.reference_error_factor is not None and reference is not None:
            ref_rel = relative_errors(reference, e)
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
    if tol.atol is not None or tol.rtol is not None:
        allowed = (tol.atol or 0.0) + (tol.rtol or 0.0) * e.abs()
        over = (o - e).abs() > allowed
        if bool(over.any()):
            index = tuple(int(i) for i in torch.nonzero(over)[0])
            problems.append(
                f"{int(over.sum())} of {o.numel()} values exceed atol={tol.atol or 0:g}, rtol={tol.rtol or 0:g} "
                f"(first at {list(index)}: got {float(o[index]):.6g}, expected {float(e[index]):.6g})"
            )
    return Comparison(not problems, max_abs, worst_rel, bound_at_worst, "; ".join(problems))
