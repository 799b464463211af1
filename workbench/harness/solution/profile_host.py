"""The profile tool's process: runs the agent's solution under torch.profiler, inside the sandbox.

Started by `workbench.agent.profile.SandboxedProfiler` as `python -I -c ... REQUEST.json`, sandboxed like the
harness's solution process (no network, no view of the tasks, guidance, sessions or home folder, a clean
environment). It imports the solution and the task's inputs.py from the scratch folder the request names,
makes one workload's inputs, warms up (compiles), profiles some calls and prints one line
`D2K_PROFILE {json}`: per-kernel device times, and for every Triton kernel the solution compiled its
registers, spills, shared memory, warps and stages. Nothing here decides anything: it is the agent's own
diagnostic, so what the solution prints cannot change a verdict. Imports only the standard library, torch
and triton.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

PREFIX = "D2K_PROFILE "


def emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(PREFIX + json.dumps(payload) + "\n")
    sys.stdout.flush()


def import_path(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _first(obj: Any, *names: str) -> float:
    for name in names:
        value = getattr(obj, name, None)
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return 0.0


def kernel_times(prof: Any) -> list[dict[str, Any]]:
    """Device time per kernel name (microseconds), from the profiler's averages."""
    rows: list[dict[str, Any]] = []
    for event in prof.key_averages():
        total = _first(event, "self_device_time_total", "self_cuda_time_total", "device_time_total", "cuda_time_total")
        if total <= 0:
            continue
        rows.append({"name": str(event.key), "calls": int(event.count), "total_us": total})
    rows.sort(key=lambda r: -float(r["total_us"]))
    return rows


def _compiled(fn: Any) -> list[Any]:
    """The CompiledKernels a Triton JITFunction holds (device_caches in Triton 3, cache before)."""
    found: list[Any] = []
    caches = getattr(fn, "device_caches", None)
    if isinstance(caches, dict):
        for entry in caches.values():
            cache = entry[0] if isinstance(entry, tuple) else entry
            if isinstance(cache, dict):
                found.extend(cache.values())
    legacy = getattr(fn, "cache", None)
    if isinstance(legacy, dict):
        for cache in legacy.values():
            if isinstance(cache, dict):
                found.extend(cache.values())
    return found


def triton_kernels(module: ModuleType) -> list[dict[str, Any]]:
    """Registers, spills, shared memory, warps and stages of every compiled variant of the module's kernels."""
    rows: list[dict[str, Any]] = []
    seen: set[int] = set()
    for value in list(vars(module).values()):
        fn = value
        for _ in range(4):  # Autotuner / Heuristics wrap the JITFunction in .fn
            if hasattr(fn, "device_caches") or hasattr(fn, "cache"):
                break
            fn = getattr(fn, "fn", None)
            if fn is None:
                break
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        for kernel in _compiled(fn):
            try:
                init = getattr(kernel, "_init_handles", None)
                if callable(init):
                    init()
            except Exception:
                pass
            meta = getattr(kernel, "metadata", None)
            rows.append(
                {
                    "name": str(getattr(kernel, "name", None) or getattr(meta, "name", "") or getattr(fn, "__name__", "?")),
                    "registers": getattr(kernel, "n_regs", None),
                    "spills": getattr(kernel, "n_spills", None),
                    "shared_bytes": getattr(meta, "shared", None),
                    "num_warps": getattr(meta, "num_warps", None),
                    "num_stages": getattr(meta, "num_stages", None),
                }
            )
    return rows


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    try:
        import torch  # noqa: PLC0415 (in the try: a failed torch load is reported)
        from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415 (in the try: a failed torch load is reported)

        device = torch.device("cuda:0")
        torch.cuda.set_device(device)
        inputs = import_path(request["inputs"], "_d2k_profile_inputs")
        solution = import_path(request["solution"], "_d2k_profile_solution")
        made = inputs.make_inputs(request["axes"], int(request["seed"]), device)
        args = {name: made[name] for name in request["order"]}  # by name, as the harness calls it
        run = solution.run
        for _ in range(int(request["warmup"])):
            run(**args)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(int(request["calls"])):
                run(**args)
            torch.cuda.synchronize()
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == request["solution"]]
        where = f" (solution line {frames[-1].lineno})" if frames else ""
        emit({"error": f"{type(exc).__name__}: {str(exc).strip()[:1500]}{where}"})
        return 0
    emit(
        {
            "device_name": torch.cuda.get_device_name(device),
            "calls": int(request["calls"]),
            "warmup": int(request["warmup"]),
            "kernels": kernel_times(prof),
            "triton": triton_kernels(solution),
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
