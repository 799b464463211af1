"""Compare each expert's speedups in `bench tasks --reports DIR` with the last figures recorded in
docs/performance.md (the task-suite tables, and the Muon expert's call-6 column). Prints one row per
workload and the largest relative change. Usage: compare_expert_speedups.py REPORTS_DIR"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| (\w+) \| \**(\w+)\** \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)x")
MUON = {"b32_m2048_n5464": 2.283, "b32_m4096_n11008": 2.199, "b8_m7168_n18432": 2.123}  # call 6, the sandboxed evaluation


def recorded() -> dict[tuple[str, str], float]:
    found = {("muon_orthogonalize", w): s for w, s in MUON.items()}
    for line in (REPO / "docs" / "performance.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            found[(match.group(1), match.group(2))] = float(match.group(5))
    return found


def main(folder: Path) -> int:
    before = recorded()
    worst = 0.0
    heads = ("ms", "outside", "ref ms", "speedup", "recorded", "change")
    print(f"{'task':24s} {'workload':34s} {'status':10s} " + " ".join(f"{h:>9s}" for h in heads))
    for path in sorted(folder.glob("*.json")):
        report = json.loads(path.read_text())
        for w in report["workloads"]:
            lat, ref = w.get("latency") or {}, w.get("reference") or {}
            speedup = ref["median_ms"] / lat["median_ms"] if lat and ref else None
            old = before.get((report["task"], w["name"]))
            change = speedup / old - 1 if speedup and old else None
            if change is not None:
                worst = max(worst, abs(change))
            print(
                f"{report['task']:24s} {w['name']:34s} {w['status']:10s} {lat.get('median_ms', 0):9.4f} "
                f"{w.get('outside_ms') or 0:9.4f} {ref.get('median_ms', 0):9.4f} {speedup or 0:8.3f} {old or 0:8.3f} "
                f"{'' if change is None else f'{change:+.1%}':>7s} {w.get('timing_note', '')[:60]}"
            )
    print(f"largest change against the recorded figures: {worst:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
