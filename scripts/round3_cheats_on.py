"""Evaluate the round-3 GPU cheats (tests/redteam/round3_cheats/) with the harness found under ROOT, the
static policy off (the classes target the layers behind it), on the Muon task's first workload: run with
ROOT = a checkout of the landed code (.before/) to show each cheat got through there, and with ROOT = .
for the harness of this tree. Usage: round3_cheats_on.py ROOT [CHEAT...]"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
ROOT = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(ROOT))

from workbench.catalog import Catalog  # noqa: E402

try:
    from workbench.harness.host.evaluate import evaluate
except ImportError:  # a tree from before the harness was split by process (a9aa66d)
    from workbench.harness.evaluate import evaluate  # type: ignore[no-redef]

CHEATS = sys.argv[2:] or ["timed_address_cache", "padded_null_calls", "leftover_device_work"]
task = Catalog(ROOT / "tasks", ROOT / "guidance").task("muon_orthogonalize")
first = task.spec.workloads[0].name
core = (HERE / "tests" / "solutions" / "muon_naive.py").read_text().replace("\ndef run(", "\ndef honest_run(")
helpers = (HERE / "tests" / "redteam" / "torch_muon.py").read_text()
scratch = Path("/tmp/round3-cheats")
scratch.mkdir(exist_ok=True)
for cheat in ["honest", *CHEATS]:
    path = scratch / f"{cheat}.py"
    honest = "def run(G, steps):\n    return honest_run(G, steps)\n"
    body = honest if cheat == "honest" else (HERE / "tests/redteam/round3_cheats" / f"{cheat}.py").read_text()
    path.write_text(core + "\n\n" + helpers + "\n\n" + body)
    report = evaluate(task, path, "cuda", [first], static_policy=cheat == "honest")
    w = report.workloads[0] if report.workloads else None
    lat = w.latency.median_ms if w and w.latency else 0.0
    ref = w.reference.median_ms if w and w.reference else 0.0
    print(
        f"{cheat:22s} {report.status:20s} ms={lat:.3f} ref={ref:.3f} speedup={(ref / lat) if lat else 0:.3f} "
        f"outside={(w.outside_ms or 0) if w else 0:.3f} | {report.message.splitlines()[0][:150] if report.message else ''}",
        flush=True,
    )
