"""Run every task's red-team cheats (tests/redteam/<task>_cheats/) on the registered workloads of a GPU.

Each cheat is appended to the task's honest naive solution (tests/solutions/<task>_naive.py, its run
renamed honest_run), as the CPU red-team tests assemble it, and evaluated by the full harness with
correctness only (no timing). Prints one line per cheat; exit 1 if any cheat passed, except a cheat
whose file says "# red-team: smoke only": it is right on every registered shape by design (the task
allows per-shape specialisation) and only a smoke shape catches it, so a pass here is expected.
Usage (GPU): python3 scripts/gpu_task_cheats.py [TASK...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.catalog import Catalog  # noqa: E402
from workbench.catalog.errors import CatalogError  # noqa: E402
from workbench.harness.host.evaluate import evaluate  # noqa: E402


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", metavar="TASK", help="tasks to run (default: every task with cheats)")
    args = parser.parse_args(argv)
    catalog = Catalog(REPO / "tasks", REPO / "guidance")
    tasks = args.tasks or sorted(t for t in catalog.task_ids() if (REPO / "tests" / "redteam" / f"{t}_cheats").is_dir())
    for task_id in tasks:  # every name checked before the first (long) evaluation
        try:
            catalog.task(task_id)
        except CatalogError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    passed = 0
    expected = 0
    with tempfile.TemporaryDirectory() as scratch:
        for task_id in tasks:
            task = catalog.task(task_id)
            core = (REPO / "tests" / "solutions" / f"{task_id}_naive.py").read_text().replace("\ndef run(", "\ndef honest_run(")
            for cheat in sorted((REPO / "tests" / "redteam" / f"{task_id}_cheats").glob("*.py")):
                path = Path(scratch) / f"{task_id}_{cheat.name}"
                path.write_text(core + "\n\n" + cheat.read_text())
                start = time.perf_counter()
                report = evaluate(task, path, "cuda", timing=False)
                smoke_only = "# red-team: smoke only" in cheat.read_text()
                if report.status == "passed" and smoke_only:
                    expected += 1
                else:
                    passed += report.status == "passed"
                first = (report.message.strip().splitlines() or [""])[0][:110]
                took = time.perf_counter() - start
                note = " (smoke only: expected)" if smoke_only and report.status == "passed" else ""
                print(f"{task_id:22s} {cheat.stem:22s} {report.status:18s} {took:5.1f} s  {first}{note}", flush=True)
    print(f"{passed} cheats passed ({expected} smoke-only cheats passed on the registered shapes, as expected)")
    return 1 if passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
