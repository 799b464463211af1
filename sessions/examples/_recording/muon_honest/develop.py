"""Command-driver script that recorded the shipped Muon example session, one revision at a time.

Run by `d2k-workbench session new muon_orthogonalize --driver command --command "python .../develop.py"`:
for each step file (in name order) it replaces $D2K_SOLUTION in one atomic write, then reads the
session's evaluation results ($D2K_RESULTS, written by the runner) until that revision's evaluation
has finished, and prints the outcome,
as an external coding agent would.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
# The revisions written in order (revision 1 is the template): a first attempt missing the 1.01
# margin, the straightforward solution (the project's honest baseline, not copied here), a variant.
STEPS = (
    HERE / "rev2_missing_margin.py",
    REPO / "tests" / "solutions" / "muon_naive.py",
    HERE / "rev4_one_pass_norm.py",
)


def events(path: Path) -> list[dict]:
    lines = path.read_bytes().split(b"\n")[:-1] if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


def wait_for_eval(log: Path, sha_count: int, timeout_s: float = 1800.0) -> dict:
    """Wait until revision number sha_count has an eval_finished (or eval_skipped) event."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        for event in events(log):
            if event["type"] in ("eval_finished", "eval_skipped") and event["rev"] == sha_count:
                return event
        time.sleep(0.5)
    raise SystemExit(f"revision {sha_count} was not evaluated within {timeout_s:g} s")


def main() -> None:
    solution = Path(os.environ["D2K_SOLUTION"])
    log = Path(os.environ["D2K_RESULTS"])
    for number, step in enumerate(STEPS, start=2):  # revision 1 is the template
        print(f"writing revision {number}: {step.name}", flush=True)
        staging = solution.with_name(solution.name + "~")  # ignored by the workspace .gitignore
        staging.write_text(step.read_text())
        staging.replace(solution)
        event = wait_for_eval(log, number)
        status = event["report"]["status"] if event["type"] == "eval_finished" else "skipped"
        print(f"revision {number}: {status}", flush=True)
    print("done", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
