"""Evaluate a solution through the harness API only (no CLI imports), for the GPU machine, where the
session and TUI dependencies are not installed. Usage: gpu_eval.py SOLUTION REPORT.json [WORKLOAD...]"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.host.evaluate import evaluate  # noqa: E402

task = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize")
import time  # noqa: E402

start = time.perf_counter()
report = evaluate(
    task,
    Path(sys.argv[1]),
    "cuda",
    sys.argv[3:] or None,
    on_progress=lambda m: print(f"  .. {time.perf_counter() - start:6.1f} s {m}", flush=True),
)
Path(sys.argv[2]).write_text(report.model_dump_json(indent=2))
print(report.status, report.message[:300])
print(f"sandbox: {getattr(report, 'sandbox', '-')}; evaluation {report.duration_s:.1f} s")
if hasattr(report, "phase_totals"):  # the harness of the timing issue on
    print("phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in report.phase_totals().items()))
for w in report.workloads:
    lat, ref = w.latency, w.reference
    print(
        f"{w.name:18s} {w.status:10s} err={w.rel_err or 0:.2e} bound={w.error_bound or 0:.2e} "
        f"ms={lat.median_ms if lat else 0:.3f} (mean {lat.mean_ms if lat else 0:.3f}, min {lat.min_ms if lat else 0:.3f}, "
        f"sem {lat.rel_sem if lat else 0:.2%}, n={lat.reps if lat else 0}) ref={ref.median_ms if ref else 0:.3f} "
        f"speedup={w.speedup or 0:.3f} tflops={w.tflops or 0:.0f} floor={w.floor_ms or 0:.3f} "
        f"outside={getattr(w, 'outside_ms', None) or 0:.3f} cover={getattr(lat, 'cover_ms', 0) if lat else 0:.3f} "
        f"method={lat.method if lat else '-'} {getattr(w, 'timing_note', '')}"
    )
