"""Tolerance study for ``muon_orthogonalize``.

Draws gradient-like matrices (``make_inputs``), measures each variant's
per-matrix relative Frobenius error against the float64 ``exact`` iteration,
and checks two rules (``e_ref`` = the float16 reference's own error):

* per matrix: ``err <= max(floor, factor * e_ref)`` for every matrix;
* per call:   ``mean(err) <= call_factor * mean(e_ref)`` over the call's batch.

NaN/Inf fails both. A rule is good when the honest variants pass every
matrix/call with room to spare and each dishonest variant fails every call.

Honest: the float16 reference, the naive Triton solution
(``tests/solutions/muon_naive.py``, run under the Triton interpreter on CPU),
and a torch emulation of the "square-side" design (compose the polynomials on
the [M, M] side, restart once after two steps).
Must fail: no 1.01 factor, four steps, no normalisation.

Usage (CPU, Triton interpreter):
    python scripts/muon_tolerance_study.py --matrices 1000 --seed 0
Usage (GPU, registered shapes; shapes as BxMxN fix the batch per shape):
    python scripts/muon_tolerance_study.py --device cuda --matrices 144 \
        --shapes 32x2048x5464 32x4096x11008 8x7168x18432
Re-evaluate saved errors under other rule parameters (no recomputation):
    python scripts/muon_tolerance_study.py --load errors.pt --floor 5e-3 --factor 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.muon_orthogonalize.inputs import make_inputs  # noqa: E402
from tasks.muon_orthogonalize.reference import COEFFS, exact, reference  # noqa: E402

DEFAULT_SHAPES: tuple[str, ...] = ("32x80", "48x160", "64x200", "16x48", "128x384")
Coeffs = tuple[tuple[float, float, float], ...]


def h(x: torch.Tensor) -> torch.Tensor:
    """Round to float16 storage and return as float32 (fp16 operand, fp32 math)."""
    return x.half().float()


def fp16_iteration(X: torch.Tensor, coeffs: Coeffs) -> torch.Tensor:
    """The reference's float16 torch iteration with an arbitrary coefficient list."""
    for a, b, c in coeffs:
        A = X @ X.mT
        X = a * X + (b * A + c * (A @ A)) @ X
    return X


def normalise_fp16(G: torch.Tensor, scale: float = 1.01) -> torch.Tensor:
    """float32 Frobenius normalisation with a chosen safety factor, then float16."""
    X = G.float()
    return (X / (torch.linalg.matrix_norm(X, keepdim=True) * scale + 1e-7)).half()


def square_side(G: torch.Tensor, steps: int) -> torch.Tensor:
    """Torch emulation of the square-side design (fp16 storage, fp32 accumulation).

    R = X X^T; for each triple Z = bR + cR^2, P = aI + Z; Q <- P Q, R <- P R P
    (computed as R <- (R P) P); restart (X <- Q X, rebuild R, Q <- I) after the
    first two triples; finally X <- Q X.
    """
    X0 = h(normalise_fp16(G).float())
    eye = torch.eye(G.shape[1], device=G.device).expand(G.shape[0], -1, -1)

    def apply(Y: torch.Tensor, Z: torch.Tensor, a: float) -> torch.Tensor:
        return h(a * Y + Y @ Z)

    for group in (COEFFS[:2], COEFFS[2:steps]):
        R, Q = h(X0 @ X0.mT), eye.clone()
        for i, (a, b, c) in enumerate(group):
            Z = h(b * R + c * (R @ R))
            Q = apply(Q, Z, a)
            if i + 1 < len(group):
                R = apply(apply(R, Z, a), Z, a)
        X0 = h(Q @ X0)
    return X0.half()


def rel_err(out: torch.Tensor, ref64: torch.Tensor) -> torch.Tensor:
    """Per-matrix ||out - ref||_F / ||ref||_F in float64 (NaN/Inf kept as inf)."""
    d = torch.linalg.matrix_norm(out.double() - ref64) / torch.linalg.matrix_norm(ref64)
    return torch.where(torch.isfinite(d), d, torch.full_like(d, float("inf")))


def variants(
    naive_run: Callable[[torch.Tensor, int], torch.Tensor],
) -> dict[str, tuple[bool, Callable[[torch.Tensor], torch.Tensor]]]:
    """name -> (honest?, G -> float16 output)."""
    return {
        "naive_triton": (True, lambda G: naive_run(G, 5)),
        "square_side": (True, lambda G: square_side(G, 5)),
        "no_1.01": (False, lambda G: fp16_iteration(normalise_fp16(G, 1.0), COEFFS)),
        "four_steps": (False, lambda G: fp16_iteration(normalise_fp16(G), COEFFS[:4])),
        "no_normalise": (False, lambda G: fp16_iteration(G.half(), COEFFS)),
    }


HONEST = ("reference", "naive_triton", "square_side")
DISHONEST = ("no_1.01", "four_steps", "no_normalise")


def measure(args: argparse.Namespace) -> dict[str, object]:
    """Run every variant on ``args.matrices`` matrices; return per-matrix errors and metadata."""
    dev = torch.device(args.device)
    if dev.type == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton.jit runs
        torch.set_num_threads(max(1, os.cpu_count() or 1))
    from tests.solutions.muon_naive import run as naive_run

    shapes: list[tuple[int, int, int]] = []
    for spec in args.shapes:
        dims = [int(x) for x in spec.split("x")]
        shapes.append((dims[0], dims[1], dims[2]) if len(dims) == 3 else (args.batch, dims[0], dims[1]))
    vs = variants(naive_run)
    errs: dict[str, list[torch.Tensor]] = {k: [] for k in ["reference", *vs]}
    shape_tag: list[torch.Tensor] = []
    call_sizes: list[int] = []
    naive_time: list[float] = []
    n_matrices, call, t0 = 0, 0, time.time()
    while n_matrices < args.matrices:
        Bc, M, N = shapes[call % len(shapes)]
        G = make_inputs({"B": Bc, "M": M, "N": N}, args.seed * 1_000_003 + call, dev)["G"]
        ex = exact(G, 5)
        errs["reference"].append(rel_err(reference(G, 5), ex).cpu())
        for name, (_, fn) in vs.items():
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t = time.time()
            out = fn(G)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            if name == "naive_triton":
                naive_time.append(time.time() - t)
            errs[name].append(rel_err(out, ex).cpu())
            del out
        shape_tag.append(torch.full((Bc,), call % len(shapes)))
        call_sizes.append(Bc)
        n_matrices += Bc
        call += 1
        del G, ex
        if call % 25 == 0:
            print(f"  {call} calls, {n_matrices} matrices, {time.time() - t0:.0f}s", file=sys.stderr)
    return {
        "errors": {k: torch.cat(v) for k, v in errs.items()},
        "shape_index": torch.cat(shape_tag),
        "shapes": shapes,
        "call_sizes": call_sizes,
        "naive_time": naive_time,
        "meta": f"seed {args.seed}, device {dev}, {time.time() - t0:.0f}s",
    }


def report(res: dict[str, object], floor: float, factor: float, call_factor: float) -> None:
    """Print the per-matrix and per-call rule tables for measured errors."""
    E: dict[str, torch.Tensor] = res["errors"]  # type: ignore[assignment]
    shapes: list[tuple[int, int, int]] = res["shapes"]  # type: ignore[assignment]
    sizes: list[int] = res["call_sizes"]  # type: ignore[assignment]
    call_shape = [i % len(shapes) for i in range(len(sizes))]
    tags: torch.Tensor = res["shape_index"]  # type: ignore[assignment]
    eref = E["reference"]
    bound = torch.clamp(factor * eref, min=floor)
    ref_mean = torch.stack([r.mean() for r in eref.split(sizes)])
    print(
        f"{eref.numel()} matrices, {len(sizes)} calls, shapes {[f'{b}x{m}x{n}' for b, m, n in shapes]}"
        f"{', ' + str(res['meta']) if 'meta' in res else ''}"
    )
    print(
        f"per-matrix rule: err <= max({floor:g}, {factor:g} * e_ref); "
        f"per-call rule: mean(err) <= {call_factor:g} * mean(e_ref); NaN/Inf fail"
    )
    for si in [None, *range(len(shapes))]:
        msk = torch.ones_like(tags, dtype=torch.bool) if si is None else tags == si
        cm = [si is None or c == si for c in call_shape]
        n, nc = int(msk.sum()), sum(cm)
        if n == 0:
            continue
        title = "all shapes" if si is None else "x".join(map(str, shapes[si]))
        print(f"[{title}] {n} matrices, {nc} calls")
        print(
            f"  {'variant':13s} {'min':>9s} {'median':>9s} {'max':>9s} {'mat.fails':>10s} {'margin':>13s}"
            f" {'calls w/ fail':>13s} | {'call.fails':>10s} {'call margin':>13s}"
        )
        for name in (*HONEST, *DISHONEST):
            e = E[name]
            ratio = e / bound
            cr = torch.stack([x.mean() for x in e.split(sizes)]) / (call_factor * ref_mean)
            cr = torch.where(torch.isfinite(cr), cr, torch.full_like(cr, float("inf")))[torch.tensor(cm)]
            em, rm = e[msk], ratio[msk]
            fin = em[torch.isfinite(em)]
            q = [f"{f(fin).item():9.2e}" if fin.numel() else f"{'inf':>9s}" for f in (torch.min, torch.median, torch.max)]
            hon = name in HONEST
            mm = f"max {rm.max().item():.3g}" if hon else f"min {rm.min().item():.3g}"
            anyf = sum(bool((x > 1).any()) for x, c in zip(ratio.split(sizes), cm) if c)
            cmg = f"max {cr.max().item():.3g}" if hon else f"min {cr.min().item():.3g}"
            print(
                f"  {name:13s} {' '.join(q)} {int((rm > 1).sum()):>5d}/{n:<4d} {mm:>13s}"
                f" {anyf:>7d}/{nc:<5d} | {int((cr > 1).sum()):>5d}/{nc:<4d} {cmg:>13s}"
            )
    nt: list[float] = res.get("naive_time", [])  # type: ignore[assignment]
    if nt:
        print("naive Triton seconds per call (median / min / max; the first call includes compilation):")
        for si, (Bc, M, N) in enumerate(shapes):
            ts = sorted(t for t, c in zip(nt, call_shape) if c == si)
            if ts:
                print(f"  {Bc}x{M}x{N}: {ts[len(ts) // 2]:.3f} / {ts[0]:.3f} / {ts[-1]:.3f} s over {len(ts)} calls")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", type=int, default=1000, help="total matrices (rounded up to whole calls)")
    ap.add_argument("--batch", type=int, default=8, help="matrices per call (for MxN shapes)")
    ap.add_argument(
        "--shapes", nargs="+", default=list(DEFAULT_SHAPES), help="MxN or BxMxN shapes, used round-robin one call at a time"
    )
    ap.add_argument("--device", default="cpu", help="cpu (Triton interpreter) or cuda")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--floor", type=float, default=5e-3)
    ap.add_argument("--factor", type=float, default=2.0)
    ap.add_argument("--call-factor", type=float, default=2.5)
    ap.add_argument("--save", type=Path, help="save per-matrix errors (torch.save)")
    ap.add_argument("--load", type=Path, help="report on saved errors instead of measuring")
    args = ap.parse_args()
    if args.load:
        res = torch.load(args.load, weights_only=False)
    else:
        res = measure(args)
        if args.save:
            torch.save(res, args.save)
    report(res, args.floor, args.factor, args.call_factor)


if __name__ == "__main__":
    main()
