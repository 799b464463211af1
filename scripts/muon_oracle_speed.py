"""Where the Muon checker's GPU time goes, outside the harness: per registered workload, the time of the
task's make_inputs, its float64 oracle (`exact`), its float16 reference and the comparison, and the rate
of a batched matrix product in each precision at the workload's Gram shape. Usage (GPU machine):
python3 scripts/muon_oracle_speed.py"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.catalog.loader import load_task  # noqa: E402
from workbench.harness.checker.compare import compare  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402


def timed(fn: Callable[[], Any], reps: int = 3) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    task = load_task(REPO / "tasks" / "muon_orthogonalize")
    ref = import_file(task.file("reference.py"), "muon_ref")
    inp = import_file(task.file("inputs.py"), "muon_inputs")
    dev = torch.device("cuda")
    print(f"{torch.cuda.get_device_name(dev)}, torch {torch.__version__}")
    for w in task.spec.workloads:
        B, M, N = (w.axes[k] for k in "BMN")
        flops = 5 * B * (4 * M * M * N + 2 * M**3)
        x = inp.make_inputs(w.axes, 1, dev)
        t_in = timed(lambda: inp.make_inputs(w.axes, 2, dev))
        t_ex = timed(lambda: ref.exact(**x), reps=1)
        t_ref = timed(lambda: ref.reference(**x), reps=2)
        e = ref.exact(**x)
        r = ref.reference(**x)
        rule = task.tolerance_for(w)
        t_cmp = timed(lambda: compare(r, e, rule, r), reps=2)
        X32 = ref._normalise(x["G"], torch.float32)
        t32 = timed(lambda: ref._iterate(X32), reps=1)
        e32 = ref._iterate(X32)
        d = ((e32.double() - e).flatten(1).norm(dim=1) / e.flatten(1).norm(dim=1)).max().item()
        print(
            f"{w.name}: inputs {t_in:.3f} s, exact fp64 {t_ex:.3f} s ({flops / t_ex / 1e12:.1f} TF/s), "
            f"fp32 {t32:.3f} s ({flops / t32 / 1e12:.1f} TF/s, max rel err vs fp64 {d:.2e}), "
            f"reference fp16 {t_ref:.3f} s, compare {t_cmp:.3f} s"
        )
        del x, e, r, X32, e32
        torch.cuda.empty_cache()
    a64 = torch.randn(8, 4096, 11008, device=dev, dtype=torch.float64)
    for dtype, tf32 in ((torch.float64, False), (torch.float32, False), (torch.float32, True), (torch.float16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = a64.to(dtype)
        t = timed(lambda: a @ a.mT, reps=3)
        print(f"bmm 8x4096x11008 @ T {dtype} tf32={tf32}: {t * 1e3:.1f} ms, {2 * 8 * 4096 * 4096 * 11008 / t / 1e12:.1f} TF/s")
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
