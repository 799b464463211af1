"""The Muon expert and reference timed three ways in one process: the harness's loop (events behind the
launch cover), the profiler's summed kernel time per call, and triton.testing.do_bench. It shows whether a
speedup the harness reports is the device's (the profiler's ratio agrees) or the host's launch time.

Usage (GPU): python3 scripts/muon_timer_compare.py [WORKLOAD ...]   (default: all three)
       python3 scripts/muon_timer_compare.py --cover-sweep WORKLOAD   (the expert behind covers of 0, the
       harness's own, the earlier 1.5 x launch + 10 us, 5 and 10 ms, three rounds interleaved, and the
       profiler's figure each round)
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

import torch
import triton

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.harness.checker.bench import profiled_ms  # noqa: E402
from workbench.harness.solution.timing import Clocks, CoverPlan, Sleeper, TimingPlan, time_calls  # noqa: E402

TASK = REPO / "tasks" / "muon_orthogonalize"
WORKLOADS = {"b32_m2048_n5464": (32, 2048, 5464), "b32_m4096_n11008": (32, 4096, 11008), "b8_m7168_n18432": (8, 7168, 18432)}


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"muon_{name}", TASK / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main(names: list[str]) -> None:
    inputs, expert, reference = _load("inputs"), _load("expert"), _load("reference")
    dev = torch.device("cuda")
    clocks = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
    sleeper = Sleeper(clocks)
    print("workload | fn | harness ms (cover ms, uncovered calls) | profiler ms | do_bench ms | host ms per timed call")
    ratios: dict[str, list[float]] = {}
    for name in names:
        b, m, n = WORKLOADS[name]
        sets = [inputs.make_inputs({"B": b, "M": m, "N": n}, seed, dev) for seed in (11, 12, 13)]
        row = {}
        for label, fn in (("expert", expert.run), ("reference", reference.reference)):
            stats, host_ms = time_calls(fn, sets, clocks, dev, "events", TimingPlan(max_time_s=10.0), sleeper)
            prof = profiled_ms(fn, sets, dev, calls=10)
            bench = triton.testing.do_bench(lambda fn=fn, a=sets[0]: fn(**a), return_mode="median")
            row[label] = (stats.median_ms, prof, bench)
            cover = f"{stats.cover_ms:.2f}, {stats.uncovered}"
            print(f"{name} | {label} | {stats.median_ms:.3f} ({cover}) | {prof:.3f} | {bench:.3f} | {host_ms:.2f}")
        ratios[name] = [row["reference"][i] / row["expert"][i] for i in range(3)]
        del sets
        torch.cuda.empty_cache()
    print("workload | speedup by harness | by profiler | by do_bench")
    for name, (h, p, d) in ratios.items():
        print(f"{name} | {h:.3f} | {p:.3f} | {d:.3f}")


def cover_sweep(name: str, rounds: int = 3) -> None:
    inputs, expert, reference = _load("inputs"), _load("expert"), _load("reference")
    dev = torch.device("cuda")
    clocks = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
    sleeper = Sleeper(clocks)
    b, m, n = WORKLOADS[name]
    sets = [inputs.make_inputs({"B": b, "M": m, "N": n}, seed, dev) for seed in (11, 12, 13)]
    covers = {"none": CoverPlan(min_ms=0.0, max_ms=0.0, margin=0.0, pad_ms=0.0), "auto": CoverPlan()}
    covers["1.5x+10us"] = CoverPlan(margin=1.5, pad_ms=0.01, min_ms=0.02)  # the cover before 2026-12-01
    covers["2x+1ms"] = CoverPlan(margin=2.0, pad_ms=1.0, min_ms=1.0)  # the first fix
    covers |= {f"{c:g} ms": CoverPlan(min_ms=c, max_ms=c) for c in (5.0, 10.0)}
    print(f"{name}: expert median ms by cover, per round (profiler's summed kernel ms last)")
    for r in range(rounds):
        cells = []
        for label, plan in covers.items():
            stats, _ = time_calls(expert.run, sets, clocks, dev, "events", TimingPlan(max_time_s=5.0), sleeper, plan)
            cells.append(f"{label} {stats.median_ms:.3f} (cover {stats.cover_ms:.2f}, uncovered {stats.uncovered}/{stats.reps})")
        cells.append(f"profiler {profiled_ms(expert.run, sets, dev, calls=10):.3f}")
        print(f"round {r + 1}: " + " | ".join(cells))
    reference_covers = {"auto": CoverPlan(), "2x+1ms": covers["2x+1ms"], "10 ms": covers["10 ms"]}
    for label, plan in reference_covers.items():
        stats, _ = time_calls(reference.reference, sets, clocks, dev, "events", TimingPlan(max_time_s=5.0), sleeper, plan)
        print(f"reference behind {label}: {stats.median_ms:.3f} (cover {stats.cover_ms:.2f}, uncovered {stats.uncovered})")
    print(f"reference by the profiler: {profiled_ms(reference.reference, sets, dev, calls=10):.3f}")
    print(f"sleeper: {sleeper.cycles_per_ms / 1e3:.0f} MHz (the highest clock seen while calibrating)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--cover-sweep"]:
        cover_sweep(sys.argv[2] if len(sys.argv) > 2 else "b32_m2048_n5464")
    else:
        main(sys.argv[1:] or list(WORKLOADS))
