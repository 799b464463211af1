"""The round-four integrity figures on a GPU (docs/harness.md, "Round four on the GPU"), one device call.

    python3 scripts/gpu_integrity_round4.py OUT_DIR [--repeats 10] [--load 3] [--before DIR] [--skip-times | --only-times]

Cases, each evaluated `--repeats` times alone and as often beside `--load` concurrent evaluations of the
rmsnorm_bwd expert on the same GPU (background `d2k-workbench eval` loops):
- padded_window: rmsnorm_bwd, the class-1 attack on a GPU (a padding launch in the window, the answer
  computed with eager torch in a list subclass's __len__), the static policy off so the runtime layer is
  what is shown: must be refused every time;
- host_heavy: rmsnorm_bwd's naive solution behind a launcher that spends over 1 ms of Python per call (an
  Enum, a match, NamedTuples), static policy on: must pass every time;
- side_stream: muon_orthogonalize, the real work on a side stream past the window with the guard's launch
  hook blinded (static policy off): must be refused as hidden_device_work (alone and loaded, once each).
Then the time of the rmsnorm_bwd expert's whole evaluation with this tree and, with --before, with the
landed tree in DIR (alternating, 3 each). Every result is one JSON line in OUT_DIR/results.jsonl, written
as it comes, so a call cut off keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.host.checker_pool import CheckerPool  # noqa: E402
from workbench.harness.host.evaluate import evaluate  # noqa: E402

RMS_WORKLOAD = "m16384_n4096"  # about 0.3 ms a call on an H100: timed with events, where host time shows
RMS_NAIVE = (REPO / "tests/solutions/rmsnorm_bwd_naive.py").read_text().replace("\ndef run(", "\ndef honest_run(")
PADDED_WINDOW = """
class Answer(list):
    def __init__(self, args):
        super().__init__()
        self.args = args

    def __len__(self):
        if not list.__len__(self):
            dY, X, W, rstd = self.args
            xhat = X.float() * rstd[:, None]
            g = dY.float() * W.float()
            c = (g * xhat).mean(dim=1, keepdim=True)
            list.extend(self, [(rstd[:, None] * (g - xhat * c)).to(X.dtype), (dY.float() * xhat).sum(dim=0)])
        return list.__len__(self)

    def __iter__(self):
        len(self)
        return list.__iter__(self)


def run(dY, X, W, rstd):
    honest_run(dY[:4096], X[:4096], W, rstd[:4096])  # the window's only work
    return Answer((dY, X, W, rstd))
"""
HOST_HEAVY = """
import enum
from typing import NamedTuple


class Part(enum.Enum):
    DX = 1
    DW = 2


class Plan(NamedTuple):
    block: int
    warps: int


def _plan(part, n):
    match part:
        case Part.DX:
            return Plan(64 if n > 1024 else 32, 4)
        case Part.DW:
            return Plan(32, 8)
    return Plan(16, 2)


def run(dY, X, W, rstd):
    total = 0
    for i in range(PLANS):
        plan = _plan(Part.DX if i % 2 else Part.DW, X.shape[1])
        total += plan.block * plan.warps
    if total < 0:
        raise ValueError("no plan")
    return honest_run(dY, X, W, rstd)
"""


def write(out: Path, record: dict[str, Any]) -> None:
    with (out / "results.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps(record), flush=True)


def plans_for_a_millisecond() -> int:
    """How many plan iterations make 1.2 ms of Python on this machine's CPU (measured, not assumed)."""
    scope: dict[str, Any] = {}
    exec(HOST_HEAVY.replace("PLANS", "n_plans"), scope)
    n = 1000
    while True:
        scope["n_plans"] = n
        started = time.perf_counter()
        total = 0
        for i in range(n):
            plan = scope["_plan"](scope["Part"].DX if i % 2 else scope["Part"].DW, 4096)
            total += plan.block
        took = time.perf_counter() - started
        if took > 1.2e-3:
            return n
        n *= 2


def background(load: int, stop: Path) -> list[subprocess.Popen[bytes]]:
    loop = (
        f"while [ ! -e {stop} ]; do python3 -m workbench eval rmsnorm_bwd tasks/rmsnorm_bwd/expert.py "
        "--device cuda > /dev/null 2>&1; done"
    )
    return [subprocess.Popen(["bash", "-c", loop], cwd=REPO) for _ in range(load)]


def one(out: Path, case: str, condition: str, task_id: str, path: Path, workload: str, static: bool, pool: CheckerPool) -> None:
    task = Catalog(REPO / "tasks", REPO / "guidance").task(task_id)
    started = time.perf_counter()
    report = evaluate(task, path, "cuda", [workload], static_policy=static, pool=pool)
    w = report.workloads[0] if report.workloads else None
    write(
        out,
        {
            "case": case,
            "condition": condition,
            "status": report.status,
            "rules": sorted({v.rule for v in report.violations}),
            "message": report.message.splitlines()[0][:200] if report.message else "",
            "latency_ms": w.latency.median_ms if w and w.latency else None,
            "device_ms": w.device_ms if w else None,
            "outside_ms": w.outside_ms if w else None,
            "note": w.timing_note[:200] if w else "",
            "wall_s": round(time.perf_counter() - started, 2),
        },
    )


def expert_times(out: Path, before: Path | None) -> None:
    trees = [("this tree", REPO)] + ([("landed", before)] if before is not None else [])
    for round_ in range(3):
        for label, root in trees:
            env = {**os.environ, "PYTHONPATH": f"/tmp/site:{root}"}
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "workbench", "eval", "rmsnorm_bwd", "tasks/rmsnorm_bwd/expert.py", "--device", "cuda"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            wall = round(time.perf_counter() - started, 2)
            write(out, {"case": "expert_eval_time", "tree": label, "round": round_, "rc": done.returncode, "wall_s": wall})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--load", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, help="a checkout of the landed tree, for the time comparison")
    parser.add_argument("--skip-times", action="store_true")
    parser.add_argument("--only-times", action="store_true", help="only the expert evaluation times (no attack cases)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = Path("/tmp/round4-gpu")
    scratch.mkdir(exist_ok=True)
    plans = plans_for_a_millisecond()
    write(args.out, {"case": "host_heavy_plans", "plans": plans})
    padded = scratch / "padded_window.py"
    padded.write_text(RMS_NAIVE + "\n\n" + PADDED_WINDOW)
    heavy = scratch / "host_heavy.py"
    heavy.write_text(RMS_NAIVE + "\n\n" + HOST_HEAVY.replace("PLANS", str(plans)))
    muon = (REPO / "tests/solutions/muon_naive.py").read_text().replace("\ndef run(", "\ndef honest_run(")
    side = scratch / "side_stream.py"
    side.write_text(muon + "\n\n" + (REPO / "tests/redteam/round4_cheats/gpu_side_stream_after_window.py").read_text())
    muon_first = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize").spec.workloads[0].name
    pool = CheckerPool()
    stop = scratch / "stop"
    try:
        for condition in () if args.only_times else ("alone", f"beside {args.load}"):
            stop.unlink(missing_ok=True)
            loaders = background(args.load, stop) if condition != "alone" else []
            if loaders:
                time.sleep(8)  # the background evaluations are past their start
            try:
                one(args.out, "side_stream", condition, "muon_orthogonalize", side, muon_first, False, pool)
                for _ in range(args.repeats):
                    one(args.out, "padded_window", condition, "rmsnorm_bwd", padded, RMS_WORKLOAD, False, pool)
                    one(args.out, "host_heavy", condition, "rmsnorm_bwd", heavy, RMS_WORKLOAD, True, pool)
            finally:
                stop.touch()
                for p in loaders:
                    p.wait(timeout=120)
        if not args.skip_times:
            expert_times(args.out, args.before)
    finally:
        pool.close()
    rows = [json.loads(line) for line in (args.out / "results.jsonl").read_text().splitlines()]
    for case in ("padded_window", "host_heavy", "side_stream"):
        for condition in ("alone", f"beside {args.load}"):
            got = [r["status"] for r in rows if r.get("case") == case and r.get("condition") == condition]
            print(f"{case:14s} {condition:10s} {len(got)} evaluations: { {s: got.count(s) for s in sorted(set(got))} }")
    times = [r for r in rows if r.get("case") == "expert_eval_time"]
    for label in sorted({r["tree"] for r in times}):
        walls = [r["wall_s"] for r in times if r["tree"] == label]
        print(f"rmsnorm_bwd expert evaluation, {label}: median {statistics.median(walls):.1f} s of {walls}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
