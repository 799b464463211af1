"""The Muon oracle in float32 precision on TF32 tensor cores (each product as three TF32 products of
the operands' high and low parts), against the float64 oracle at the registered shapes: speed and the
largest per-matrix relative Frobenius difference. Usage (GPU machine): python3 scripts/muon_oracle_tf32x3.py"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.catalog.loader import load_task  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402


@contextlib.contextmanager
def tf32() -> Iterator[None]:
    """TF32 tensor cores for float32 products while in the block (restored after)."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def parts(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (float32) as high + low: high keeps TF32's 10 significand bits, low = x - high (exact)."""
    high = (x.view(torch.int32) & -8192).view(torch.float32)
    return high, x - high


def product3(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """a @ b from three TF32 products (low x low dropped), accumulated in float32."""
    return a[0] @ b[0] + (a[0] @ b[1] + a[1] @ b[0])


def exact_tf32x3(ref: ModuleType, G: torch.Tensor, steps: int) -> torch.Tensor:
    """The task's five steps in float32 with every product as three TF32 products (float64 normalisation)."""
    X = ref._normalise(G, torch.float64).to(torch.float32)
    with tf32():
        for a, b, c in ref.COEFFS[:steps]:
            x = parts(X)
            A = product3(x, (x[0].mT, x[1].mT))
            a_parts = parts(A)
            B = b * A + c * product3(a_parts, a_parts)
            X = a * X + product3(parts(B), x)
    out: torch.Tensor = X.contiguous()
    return out


def main() -> None:
    task = load_task(REPO / "tasks" / "muon_orthogonalize")
    ref = import_file(task.file("reference.py"), "muon_ref")
    inp = import_file(task.file("inputs.py"), "muon_inputs")
    dev = torch.device("cuda")
    for w in task.spec.workloads:
        worst = worst_scaled = 0.0
        t64 = t3 = 0.0
        for seed in (1, 2):
            x = inp.make_inputs(w.axes, seed, dev)
            torch.cuda.synchronize()
            t = time.perf_counter()
            e = ref.exact(**x)
            torch.cuda.synchronize()
            t64 += time.perf_counter() - t
            t = time.perf_counter()
            f = exact_tf32x3(ref, **x)
            torch.cuda.synchronize()
            t3 += time.perf_counter() - t
            d = ((f.double() - e).flatten(1).norm(dim=1) / e.flatten(1).norm(dim=1)).max().item()
            worst = max(worst, d)
            x["G"].mul_(1000.0)
            e = ref.exact(**x)
            f = exact_tf32x3(ref, **x)
            d = ((f.double() - e).flatten(1).norm(dim=1) / e.flatten(1).norm(dim=1)).max().item()
            worst_scaled = max(worst_scaled, d)
            del x, e, f
            torch.cuda.empty_cache()
        print(
            f"{w.name}: float64 {t64 / 2:.3f} s, tf32x3 {t3 / 2:.3f} s ({t64 / t3:.2f}x), "
            f"max rel Frobenius difference {worst:.2e} (inputs x1000: {worst_scaled:.2e})"
        )


if __name__ == "__main__":
    main()
