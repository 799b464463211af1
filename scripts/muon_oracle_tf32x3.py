"""The Muon oracle on a GPU (reference.exact_tf32x3: float32 with every product as three TF32 products)
against float64 (reference.exact_float64) at the registered shapes, and what the difference does to the
check: per matrix, the relative Frobenius difference d between the two oracles, and for the expert, the
float16 reference and the tightest dishonest variant (no 1.01 factor) the ratio err / bound under each
oracle (bound = max(5e-3, 2 x the float16 reference's error against that oracle), the task's rule).
Usage (GPU machine): python3 scripts/muon_oracle_tf32x3.py [--seeds 4]"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.catalog.loader import load_task  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402

FLOOR, FACTOR = 5e-3, 2.0


def rel(y: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
    """Per-matrix relative Frobenius error of y against o (float64)."""
    o = o.double()
    out: torch.Tensor = (y.double() - o).flatten(1).norm(dim=1) / o.flatten(1).norm(dim=1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    task = load_task(REPO / "tasks" / "muon_orthogonalize")
    ref = import_file(task.file("reference.py"), "muon_ref")
    inp = import_file(task.file("inputs.py"), "muon_inputs")
    expert = import_file(task.file("expert.py"), "muon_expert")
    dev = torch.device("cuda")

    def no_margin(G: torch.Tensor, steps: int) -> torch.Tensor:  # the tightest cheat: 1.0 in place of 1.01
        X = G.to(torch.float32)
        X = X / (torch.linalg.matrix_norm(X, ord="fro", keepdim=True) + ref.NORM_EPS)
        out: torch.Tensor = ref._iterate(X.to(torch.float16))
        return out

    print(
        "workload | matrices | float64 s | tf32x3 s | speed-up | max d | expert ratio (f64, tf32x3, max |change|) | "
        "no-1.01 min ratio (f64, tf32x3)"
    )
    for w in task.spec.workloads:
        d_all, r_exp, r_cheat = [], [], []
        t64 = t3 = 0.0
        for seed in range(1, args.seeds + 1):
            x = inp.make_inputs(w.axes, seed, dev)
            torch.cuda.synchronize()
            t = time.perf_counter()
            o64 = ref.exact_float64(**x)
            torch.cuda.synchronize()
            t64 += time.perf_counter() - t
            t = time.perf_counter()
            o3 = ref.exact_tf32x3(**x)
            torch.cuda.synchronize()
            t3 += time.perf_counter() - t
            y_ref, y_exp, y_cheat = ref.reference(**x), expert.run(**x), no_margin(**x)
            d_all.append(rel(o3, o64))
            ratios = []
            for o in (o64, o3):
                bound = torch.clamp(FACTOR * rel(y_ref, o), min=FLOOR)
                ratios.append((rel(y_exp, o) / bound, rel(y_cheat, o) / bound))
            r_exp.append(torch.stack([ratios[0][0], ratios[1][0]]))
            r_cheat.append(torch.stack([ratios[0][1], ratios[1][1]]))
            del x, o64, o3, y_ref, y_exp, y_cheat
            torch.cuda.empty_cache()
        d = torch.cat(d_all)
        e = torch.cat(r_exp, dim=1)
        c = torch.cat(r_cheat, dim=1)
        print(
            f"{w.name} | {d.numel()} | {t64 / args.seeds:.3f} | {t3 / args.seeds:.3f} | {t64 / t3:.2f}x | {d.max().item():.2e} | "
            f"{e[0].max().item():.3f}, {e[1].max().item():.3f}, {(e[1] - e[0]).abs().max().item():.4f} | "
            f"{c[0].min().item():.2f}, {c[1].min().item():.2f}"
        )


if __name__ == "__main__":
    main()
