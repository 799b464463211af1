"""Comparing a solution's output with the oracle under a task's tolerance, NaN/Inf-aware.

The comparison runs in float64 over bounded blocks of the outputs (`CHUNK_ELEMENTS` at a time), so its
scratch memory does not grow with the workload: a whole-tensor float64 copy of a 1.4-billion-element
output would be 11 GiB per copy, and the comparison needs several.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from workbench.catalog.task import CompareRule
from workbench.harness.solution.transport import pack

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
    rel = _relative(sums.diff_sq, sums.scale_sq)
    ref_rel = None
    if tol.matrix_rel_fro is not None and sums.ref_sq is not None:
        ref_rel = _relative(sums.ref_sq, sums.scale_sq)
        ref_rel = torch.where(torch.isfinite(ref_rel), ref_rel, torch.zeros_like(ref_rel))
    findings = _Findings(
        float(sums.max_abs) if sums.max_abs is not None else 0.0,
        float(rel.max()) if rel.numel() else 0.0,
        sums.over,
        sums.first_over,
    )
    return _verdict(out, oracle, tol, findings, rel, ref_rel)


@dataclass(frozen=True)
class _Findings:
    """One comparison's figures once summed (no value NaN or Inf where the oracle's is finite)."""

    max_abs: float
    worst_rel: float  # the largest per-matrix relative error (NaN where one is)
    over: int  # values over atol + rtol |oracle|
    first_over: int | None  # flat index of the first of them


def _verdict(
    out: torch.Tensor, oracle: torch.Tensor, tol: CompareRule, found: _Findings, rel: torch.Tensor, ref_rel: torch.Tensor | None
) -> Comparison:
    """The verdict and message of one comparison from its findings and its per-matrix relative errors `rel`
    (`ref_rel`: the reference's, where the rule bounds the error by it)."""
    problems: list[str] = []
    worst_rel = found.worst_rel
    bound_at_worst: float | None = None
    if tol.matrix_rel_fro is not None:
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
    if found.over and found.first_over is not None:
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(found.first_over), oracle.shape))
        got, expected = float(out[index]), float(oracle[index])
        problems.append(
            f"{found.over} of {out.numel()} values exceed atol={tol.atol or 0:g}, rtol={tol.rtol or 0:g} "
            f"(first at {list(index)}: got {got:.6g}, expected {expected:.6g})"
        )
    return Comparison(not problems, found.max_abs, worst_rel, bound_at_worst, "; ".join(problems))


BATCH_PAIR_VALUES = 1 << 18  # pairs of at most this many values are compared in batches (`compare_many`) ...
BATCH_VALUES = 1 << 21  # ... of at most this many values (its temporaries: about 150 bytes a value) ...
BATCH_PAIRS = 4096  # ... and pairs


def compare_many(
    outs: Sequence[torch.Tensor], oracles: Sequence[torch.Tensor], tol: CompareRule, chunk: int = CHUNK_ELEMENTS
) -> Iterator[Comparison]:
    """`compare(out, oracle, tol)` of each pair, in order: the same verdicts and messages (figures to the last
    bits that summing in another order changes), a list's many small elements compared a batch at a time.

    A batch is a run of consecutive pairs of one shape each side, dtypes and device, of at most
    BATCH_PAIR_VALUES values each and `chunk` values in all: their values are concatenated into one float64
    block (at most BATCH_VALUES) and every figure is reduced per pair (per matrix, for the relative errors) in a
    few operations, instead of a few dozen operations (and host reads) per pair. Other pairs go through
    `compare`. A consumer that stops at the first failure computes no message after it."""
    start = 0
    while start < len(outs):
        if not _batchable(outs[start], oracles[start], chunk):
            yield compare(outs[start], oracles[start], tol, chunk=chunk)
            start += 1
            continue
        end, total = start, 0
        kinds = (outs[start].dtype, oracles[start].dtype, oracles[start].device)
        while (
            end < len(outs)
            and end - start < BATCH_PAIRS
            and _batchable(outs[end], oracles[end], chunk)
            and (outs[end].dtype, oracles[end].dtype, oracles[end].device) == kinds
            and total + oracles[end].numel() <= min(chunk, BATCH_VALUES)
        ):
            total += oracles[end].numel()
            end += 1
        yield from _compare_batch(outs[start:end], oracles[start:end], tol)
        start = end


def _batchable(out: torch.Tensor, oracle: torch.Tensor, chunk: int) -> bool:
    return out.shape == oracle.shape and out.device == oracle.device and 0 < oracle.numel() <= min(BATCH_PAIR_VALUES, chunk)


def _compare_batch(outs: Sequence[torch.Tensor], oracles: Sequence[torch.Tensor], tol: CompareRule) -> Iterator[Comparison]:
    """`compare` of each pair (one shape each side, no pair empty), their figures reduced over one block."""
    device = oracles[0].device
    numels = [e.numel() for e in oracles]
    widths = [e.shape[-2] * e.shape[-1] if e.ndim >= 2 else e.numel() for e in oracles]  # _per_matrix's
    o = pack(outs).double()  # each side's values in one concatenation (not two tensor methods per pair)
    e = pack(oracles).double()
    count = len(numels)
    diff = o - e
    gap = diff.abs()
    checked = tol.atol is not None or tol.rtol is not None
    over = gap > (tol.atol or 0.0) + (tol.rtol or 0.0) * e.abs() if checked else None
    columns: list[tuple[torch.Tensor, str, float]] = [
        ((~torch.isfinite(o) & torch.isfinite(e)).long(), "sum", 0),
        (gap.isnan().long(), "sum", 0),
        (torch.where(gap.isnan(), 0.0, gap), "amax", 0.0),
    ]
    if over is not None:
        columns += [(over.long(), "sum", 0), (over.long(), "first", 0)]
    reduced = _per_pair(columns, numels)
    bad, nan, largest = reduced[0], reduced[1], reduced[2]
    max_abs = torch.where(nan > 0, torch.nan, largest)  # a NaN stays, as in `compare`
    if over is not None:
        overs, first = reduced[3], reduced[4]
    else:
        overs = first = torch.zeros(count, dtype=torch.int64, device=device)
    # per matrix (the last two dims of a pair; a vector is one), the sums of squares
    matrices = [n // w for n, w in zip(numels, widths, strict=True)]
    diff_sq, scale_sq = _per_matrix_sums(diff.square(), e.square(), widths, matrices)
    rel = _relative(diff_sq, scale_sq)
    owner = torch.repeat_interleave(torch.arange(count, device=device), torch.tensor(matrices, device=device))
    worst = torch.zeros(count, dtype=torch.float64, device=device).scatter_reduce_(
        0, owner, torch.where(rel.isnan(), 0.0, rel), "amax", include_self=False
    )
    nan_rel = torch.zeros(count, dtype=torch.int64, device=device).index_add_(0, owner, rel.isnan().long())
    worst = torch.where(nan_rel > 0, torch.nan, worst)
    del o, e, diff, gap, over
    figures = zip(bad.tolist(), max_abs.tolist(), worst.tolist(), overs.tolist(), first.tolist(), strict=True)
    row = 0
    for (n_bad, largest_gap, worst_rel, n_over, first_over), out, oracle, m in zip(figures, outs, oracles, matrices, strict=True):
        if n_bad:
            yield Comparison(False, float("inf"), float("inf"), None, f"{n_bad} output values are NaN or Inf")
        else:
            found = _Findings(largest_gap, worst_rel, n_over, first_over if n_over else None)
            yield _verdict(out, oracle, tol, found, rel[row : row + m], None)
        row += m


def _per_pair(columns: Sequence[tuple[torch.Tensor, str, float]], numels: list[int]) -> list[torch.Tensor]:
    """Each 1-D column reduced over each pair's run of values (pair i: the next numels[i] values): "sum", "amax",
    or "first" (the position in the pair of the first value that is not zero; the pair's length where none is),
    padding with `fill`.
    Pairs of sizes within a factor 2 are reduced together, as the rows of one zero-padded [pairs, width] gather:
    row reductions, no atomics (index_add_ of two million values into some eighty slots serialised on a GPU:
    about 3.5 s a check of fused_adamw's 10,000 tensors on an H100) and the same bits on every run."""
    device = columns[0][0].device
    results = [torch.empty(len(numels), dtype=x.dtype, device=device) for x, _, _ in columns]
    starts, offset = [], 0
    for n in numels:
        starts.append(offset)
        offset += n
    classes: dict[int, list[int]] = {}
    for i, n in enumerate(numels):
        classes.setdefault(max(n - 1, 0).bit_length(), []).append(i)
    for members in classes.values():
        width = max(numels[i] for i in members)
        index = torch.tensor(members, device=device)
        span = torch.tensor([numels[i] for i in members], device=device)
        column = torch.arange(width, device=device)
        inside = column < span[:, None]
        at = torch.where(inside, torch.tensor([starts[i] for i in members], device=device)[:, None] + column, 0)
        for (x, op, fill), out in zip(columns, results, strict=True):
            if op == "first":
                hit = inside & (x[at] != 0)
                out[index] = torch.where(hit, column, width).amin(dim=1).minimum(span)
                continue
            rows = torch.where(inside, x[at], fill)
            out[index] = rows.sum(dim=1) if op == "sum" else rows.amax(dim=1)
    return results


def _per_matrix_sums(
    diff_sq: torch.Tensor, scale_sq: torch.Tensor, widths: list[int], matrices: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sums of `diff_sq` and `scale_sq` over each matrix of a block (pair i: matrices[i] rows of widths[i] values,
    in order), as [matrices] float64: each matrix one run of `_per_pair` (plain row sums, no atomics)."""
    runs = [w for w, m in zip(widths, matrices, strict=True) for _ in range(m)]
    diff, scale = _per_pair([(diff_sq, "sum", 0.0), (scale_sq, "sum", 0.0)], runs)
    return diff, scale
