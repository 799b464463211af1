"""The harness's per-call cost on a long tensor list, measured on the CPU (performance-notebook.md, 2026-12-07).

Usage: `OMP_NUM_THREADS=1 .venv/bin/python docs/notes/bench_tensor_lists.py [NT] [--calls N] [--skip-eval] [--profile] [--ops]`

A copy of tasks/fused_adamw with one more smoke workload, `bench_adapters_<NT>t` (LAYOUT 3, width 5: NT tensors
of 40-80 elements each, four lists), and its expert:

1. `evaluate` on the CPU (the Triton interpreter; no timing), with inputs sent from the checker and with inputs
   made in the solution process (a GPU's way): the report's duration and its breakdown per activity;
2. the timed calls' path, driven from here as process.py's TimedCallSampler drives it: one solution process,
   the three timing slots filled, then `--calls` refills (inputs made in the process from a seed, written into
   the slot's buffers) each followed by a timed call, and one sampled call fetched and checked. Per phase:
   wall seconds here (deliver, call, fetch, check).

`--ops`: instead, per step of the harness on one list of 10,000 tensors, the operations that run a kernel (on a
GPU, one launch each; views, allocations and host reads apart), and the host reads, done one element at a time
(the way before 2026-12-07, written out here) and done the way the harness does now, with the CPU seconds of each.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.catalog.loader import load_task  # noqa: E402
from workbench.harness.host.evaluate import evaluate  # noqa: E402


def bench_task(dest: Path, count: int) -> tuple[Path, str]:
    """A copy of fused_adamw under `dest` with the bench workload added; (its folder, the workload's name)."""
    from workbench.harness.protocol.task_files import import_file  # noqa: PLC0415

    inputs = import_file(ROOT / "tasks" / "fused_adamw" / "inputs.py", "_bench_shapes")  # the list's total

    axes = {"LAYOUT": 3, "NT": count, "HID": 5, "SB": 4}
    total = sum(_numel(s) for s in inputs.element_shapes(axes))
    task_dir = dest / "tasks" / "fused_adamw"
    shutil.copytree(ROOT / "tasks" / "fused_adamw", task_dir, ignore=shutil.ignore_patterns("__pycache__"))
    name = f"bench_adapters_{count}t"
    with (task_dir / "task.toml").open("a") as toml:
        toml.write(
            f'\n[[smoke_workloads]]\nname = "{name}"\naxes = {{ LAYOUT = 3, NT = {count}, P = {total}, HID = 5, SB = 4 }}\n'
        )
    return task_dir, name


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def run_evaluate(task_dir: Path, name: str) -> None:
    task = load_task(task_dir)
    for seeded in (False, True):
        started = time.perf_counter()
        report = evaluate(task, task_dir / "expert.py", "cpu", workloads=[name], timing=False, seeded_inputs=seeded)
        wall = time.perf_counter() - started
        w = report.workloads[0]
        parts = " ".join(f"{k} {v:.2f}" for k, v in sorted(w.breakdown.items()))
        phases = " ".join(f"{k} {v:.2f}" for k, v in sorted(w.phases.items()))
        print(f"evaluate seeded={seeded}: {report.status} wall {wall:.2f} s; breakdown: {parts}; phases: {phases}")


def run_timed_path(task_dir: Path, name: str, calls: int) -> None:
    """The refills and timed calls of `time_workload`, without the timing itself (the CPU has no events)."""
    import torch  # noqa: PLC0415

    from workbench.harness.checker.correctness import WorkloadChecker  # noqa: PLC0415
    from workbench.harness.checker.launch import launch  # noqa: PLC0415
    from workbench.harness.checker.remote import RemoteSolution  # noqa: PLC0415
    from workbench.harness.protocol.task_files import import_file  # noqa: PLC0415

    torch.set_num_threads(1)
    task = load_task(task_dir)
    workload = task.workload(name)
    reference = import_file(task_dir / "reference.py", "_bench_reference")
    inputs = import_file(task_dir / "inputs.py", "_bench_inputs")
    solution = RemoteSolution(task_dir / "expert.py", torch.device("cpu"), time.monotonic() + 3600, 3600)
    solution.start(launch(task_dir / "expert.py", "cpu", []))
    try:
        solution.init((task_dir / "inputs.py").read_text())
        assert not solution.load()
        checker = WorkloadChecker(task, workload, solution, reference, inputs.make_inputs, torch.device("cpu"), 1234, True)
        clock: dict[str, float] = {}

        def timed(what: str, fn: object, *args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            out = fn(*args, **kwargs)  # type: ignore[operator]
            clock[what] = clock.get(what, 0.0) + time.perf_counter() - started
            return out

        for k, slot in enumerate((100, 101, 102)):
            timed("fill slots", checker.deliver, slot, 500 + k, timed=True)
        outside = 0.0  # of the timed calls' wall time, what is not the call itself (the harness's share)
        for call in range(calls):
            slot = 100 + call % 3
            timed("refill", checker.deliver, slot, 10_001 + call, refill=True, timed=True)
            reply = timed("timed call", checker.call, slot, timed=True)
            outside += (reply.wall_ms - reply.ms) / 1e3  # type: ignore[attr-defined]
        clock["timed call outside run"] = outside
        solution.sample(0)
        fetched = timed("fetch", checker.fetch, sample=0)
        timed("check", checker.verify, 10_000 + calls, checker.fresh_inputs(10_000 + calls), *fetched)  # type: ignore[misc]
        print(f"timed path, {calls} calls: " + " ".join(f"{k} {v:.2f}" for k, v in clock.items()))
        print("checker breakdown: " + " ".join(f"{k} {v:.2f}" for k, v in sorted(checker.breakdown.items())))
    finally:
        solution.close()


def run_op_counts() -> None:
    """Kernels and host reads per step on one list, one element at a time against the harness's way now."""
    import random  # noqa: PLC0415

    import torch  # noqa: PLC0415
    from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC0415

    from workbench.catalog.task import CompareRule  # noqa: PLC0415
    from workbench.harness.checker.compare import compare, compare_many  # noqa: PLC0415
    from workbench.harness.solution.host import PackedCopy, _same_bits, copy_all, separate  # noqa: PLC0415
    from workbench.harness.solution.transport import digest, digest_each  # noqa: PLC0415

    free = {"view", "_unsafe_view", "reshape", "alias", "detach", "split", "split_with_sizes", "slice", "select"}
    free |= {"as_strided", "unsqueeze", "expand", "t", "empty", "empty_strided", "lift_fresh", "_local_scalar_dense"}

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.kernels = self.reads = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            name = func.overloadpacket.__name__
            self.reads += name in ("_local_scalar_dense", "equal")
            self.kernels += name not in free
            return func(*args, **(kwargs or {}))

    torch.set_num_threads(1)
    values = [torch.randn(r, 80) for r in (8, 13, 9, 14, 10, 15, 11, 16, 12) * 1112][:10000]
    got = [v + 1e-9 for v in values]
    rule = CompareRule(atol=2e-8, rtol=1e-6)
    buffers, copies, packed = [v.clone() for v in values], [v.clone() for v in values], PackedCopy.of(values)

    def copy_each() -> None:
        for buffer, value in zip(buffers, values, strict=True):
            buffer.copy_(value)

    def separate_each() -> None:
        for value in values:
            torch.empty(value.shape).copy_(value)
            torch.empty(512 * random.randint(1, 16), dtype=torch.uint8)

    steps: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        (
            "compare",
            lambda: [compare(a, b, rule) for a, b in zip(got, values, strict=True)],
            lambda: list(compare_many(got, values, rule)),
        ),
        ("digests", lambda: [digest(v) for v in values], lambda: digest_each(values)),
        ("refill's copy", copy_each, lambda: copy_all(buffers, values)),
        ("separate", separate_each, lambda: separate(values, torch.device("cpu"), [])),
        ("pristine copy", lambda: [v.clone() for v in values], lambda: PackedCopy.of(values)),
        ("mutation check", lambda: _same_bits(values, copies), lambda: _same_bits(values, packed)),
    ]
    print("| step, one list of 10,000 tensors of 640-1280 float32 | kernels (host reads) before | now | CPU s before | now |")
    for name, before, now in steps:
        row = []
        for fn in (before, now):
            with Count() as count:
                fn()
            row.append(f"{count.kernels} ({count.reads})")
        for fn in (before, now):
            started = time.perf_counter()
            fn()
            fn()
            row.append(f"{(time.perf_counter() - started) / 2:.3f}")
        print(f"| {name} | " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", nargs="?", type=int, default=2000, help="tensors per list")
    parser.add_argument("--calls", type=int, default=6, help="timed calls on the timed path")
    parser.add_argument("--skip-eval", action="store_true")
    parser.add_argument("--ops", action="store_true", help="kernels per step on one list, before and now")
    parser.add_argument("--profile", action="store_true", help="cProfile of this process (the checker's side) on the timed path")
    args = parser.parse_args()
    if args.ops:
        run_op_counts()
        return
    with tempfile.TemporaryDirectory() as scratch:
        task_dir, name = bench_task(Path(scratch), args.count)
        if not args.skip_eval:
            run_evaluate(task_dir, name)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(run_timed_path, task_dir, name, args.calls)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        else:
            run_timed_path(task_dir, name, args.calls)


if __name__ == "__main__":
    main()
