"""How far the Muon task's fast GPU oracles are from the float64 iteration, and how fast each is (GPU).

For each registered workload of tasks/muon_orthogonalize and each seed, the task's own inputs are made on the GPU
and orthogonalised three ways: `exact_float64` (the float64 iteration), `exact_tf32x3` (three TF32 products per
product, the oracle `exact()` runs on a GPU) and `exact_f16x3` (three float16 products of scaled parts). Per
workload and seed it writes one JSON line: each oracle's wall time (synchronised), each fast oracle's largest
relative Frobenius distance `d` from float64 over the matrices, and the float16 reference's error, whose double
is the check's bound where it exceeds 5e-3. docs/tolerance-muon.md explains why `d <= 3e-4` keeps every verdict.

    python3 scripts/muon_oracle_precision.py --seeds 2 --out results.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.catalog.catalog import Catalog  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402

Oracle = Callable[[torch.Tensor, int], torch.Tensor]
CHUNK_ELEMENTS = 1 << 26  # elements of G per chunk: float64 copies of a chunk stay a few GiB


def chunked(fn: Oracle, G: torch.Tensor) -> torch.Tensor:
    """`fn` over chunks of whole matrices, results in float64."""
    per = max(1, CHUNK_ELEMENTS // (G.shape[1] * G.shape[2]))
    return torch.cat([fn(G[i : i + per], 5).double() for i in range(0, G.shape[0], per)])


def timed(fn: Oracle, G: torch.Tensor) -> tuple[torch.Tensor, float]:
    """`chunked(fn, G)` and its wall time, after one untimed call on one matrix (cuBLAS picks its kernels)."""
    fn(G[:1], 5)
    torch.cuda.synchronize()
    started = time.perf_counter()
    out = chunked(fn, G)
    torch.cuda.synchronize()
    return out, time.perf_counter() - started


def distance(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest relative Frobenius distance over the matrices."""
    return float(((got - want).flatten(1).norm(dim=1) / want.flatten(1).norm(dim=1)).max())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1, help="input seeds per workload (default 1)")
    parser.add_argument("--workloads", nargs="*", default=None, help="registered workload names (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="also append the JSON lines to this file")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if not torch.cuda.is_available():
        print("muon_oracle_precision: needs a CUDA GPU (the fast oracles are GPU products)", file=sys.stderr)
        return 2
    task = Catalog(ROOT / "tasks", ROOT / "guidance").task("muon_orthogonalize")
    reference = import_file(task.file("reference.py"), "_muon_oracle_reference")
    inputs = import_file(task.file("inputs.py"), "_muon_oracle_inputs")
    workloads = [w for w in task.spec.workloads if args.workloads is None or w.name in args.workloads]
    unknown = set(args.workloads or ()) - {w.name for w in workloads}
    if unknown:
        parser.error(f"no registered workload {sorted(unknown)[0]!r}")
    for workload in workloads:
        for seed in range(args.seeds):
            G = inputs.make_inputs(workload.axes, 1000 + seed, "cuda")["G"]
            exact, t64 = timed(reference.exact_float64, G)
            line: dict[str, object] = {
                "workload": workload.name,
                "seed": seed,
                "device": torch.cuda.get_device_name(),
                "torch": torch.__version__,
                "float64_s": round(t64, 3),
                "reference_err": distance(chunked(reference.reference, G), exact),
            }
            for name in ("tf32x3", "f16x3"):
                try:  # one oracle failing (a product this torch lacks) still leaves the other's figures
                    got, seconds = timed(getattr(reference, f"exact_{name}"), G)
                except (RuntimeError, TypeError) as exc:
                    line[f"{name}_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    continue
                line[f"{name}_s"], line[f"{name}_d"] = round(seconds, 3), distance(got, exact)
                del got
            print(json.dumps(line), flush=True)
            if args.out is not None:
                with args.out.open("a") as out:
                    out.write(json.dumps(line) + "\n")
            del G, exact
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
