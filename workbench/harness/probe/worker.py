"""The import probe's process: describes peer problems by running their own code (torch; run sandboxed).

Started by `workbench.harness.host.probe` inside the allow-list sandbox, with nothing of the peer's checkout
bound: each request (one JSON line on stdin) carries the problem's source text. For each request a forked
child runs the problem, with an address-space limit, and the parent writes one JSON line (`ProbeResult`'s
fields) to its stdout; the child's own output (the peer's prints) goes to stderr. A child that runs past the
request's time is killed and reported as such. The host validates every line it reads: this process runs
code from outside the project.

A KernelBench problem is run at its own sizes on the meta device (shapes only: no memory, no arithmetic; on
the CPU when an op has no meta kernel), then at the first candidate of reduced sizes that fits the element
budget and runs on the CPU: there the builder runs twice at one seed and once at another, and the forward
twice on the same inputs, to find randomness the harness's seed does not reach. A GPU MODE problem is
generated at each benchmark's parameters (on the meta device where its builder allows, else the CPU) and
its reference run on meta copies for the output's shape; the test shapes chosen as smoke workloads get the
same checks as KernelBench's.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

import torch

from workbench.harness.probe import peer_runtime as rt

MEMORY_LIMIT = 24 * 2**30  # address space of one probe, bytes
DTYPE_NAMES = {
    torch.float64: "float64",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float8_e4m3fn: "float8_e4m3fn",
    torch.float8_e5m2: "float8_e5m2",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}


class Skip(Exception):
    """The problem cannot become a task: `reason` is one of protocol.probe.SkipReason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _error_text(exc: BaseException) -> str:
    """The exception and the peer's line it came from (the last frame in one of the peer's files)."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename in ("problem.py", "reference.py", "task.py", "utils.py"):
            where = f" ({frame.filename}, line {frame.lineno}: {frame.line})"
    return f"{type(exc).__name__}: {str(exc)[:300]}{where}"


def tensor_info(t: torch.Tensor) -> dict[str, Any]:
    dtype = DTYPE_NAMES.get(t.dtype)
    if dtype is None:
        raise Skip("unsupported_inputs", f"a tensor of dtype {t.dtype} (not a dtype tasks can declare)")
    return {"dtype": dtype, "shape": list(t.shape), "contiguous": bool(t.is_contiguous())}


def value_info(value: Any) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "tensor": tensor_info(value)}
    if isinstance(value, bool):
        return {"kind": "bool", "value": value}
    if isinstance(value, int):
        return {"kind": "int", "value": value}
    if isinstance(value, float):
        return {"kind": "float", "value": value}
    return {"kind": "other", "type_name": type(value).__name__[:80]}


def outputs_of(result: Any) -> tuple[list[torch.Tensor], bool]:
    """The tensors a call returned and whether they came as a tuple; Skip for anything else."""
    if isinstance(result, torch.Tensor):
        return [result], False
    if isinstance(result, (tuple, list)) and result and all(isinstance(r, torch.Tensor) for r in result):
        return list(result), True
    raise Skip("non_tensor_output", f"the call returns {type(result).__name__}, not a tensor or a tuple of tensors")


def same(a: Any, b: Any) -> bool:
    """Bit-for-bit equality of two values (NaN equal to NaN in the same place)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            return bool(torch.equal(torch.nan_to_num(a.float(), nan=1.25e-7), torch.nan_to_num(b.float(), nan=1.25e-7)))
        return bool(torch.equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _clone(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def _meta(value: Any) -> Any:
    return value.to("meta") if isinstance(value, torch.Tensor) else value


def _elements(values: list[Any]) -> int:
    return sum(v.numel() for v in values if isinstance(v, torch.Tensor))


# ---- KernelBench -------------------------------------------------------------------------------------------


def _kernelbench_load(request: dict[str, Any], sizes: dict[str, int], device: str) -> types.ModuleType:
    try:
        problem = rt.load(request["sources"], request["main"], sizes, device)
    except Exception as exc:
        raise Skip("does_not_load", _error_text(exc)) from exc
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if not callable(getattr(problem, name, None))]
    if missing:
        raise Skip("not_a_problem", f"defines no {', '.join(missing)}")
    return problem


def _hidden_tensors(model: torch.nn.Module) -> list[str]:
    """Tensors the model holds outside its parameters and buffers (the harness could not pass them to run)."""
    found = []
    for prefix, module in model.named_modules():
        for key, value in vars(module).items():
            if isinstance(value, torch.Tensor):
                found.append(f"{prefix}.{key}" if prefix else key)
    return found


def _kernelbench_observe(request: dict[str, Any], sizes: dict[str, int], device: str) -> dict[str, Any]:
    problem = _kernelbench_load(request, sizes, device)
    try:
        args, model = rt.kernelbench_parts(problem, 1, device)
    except Exception as exc:
        raise Skip("cpu_failure", f"building the inputs or the model failed: {_error_text(exc)}") from exc
    if not isinstance(model, torch.nn.Module):
        raise Skip("not_a_problem", "Model(...) is not a torch.nn.Module")
    hidden = _hidden_tensors(model)
    if hidden:
        raise Skip("hidden_tensors", f"the model keeps tensors outside its parameters and buffers: {', '.join(hidden[:4])}")
    precision = request["precision"]
    args = [rt.cast(a, precision) for a in args]
    if precision in rt.PRECISIONS:
        model = model.to(rt.PRECISIONS[precision])
    try:
        with torch.no_grad():
            result = model(*args)
    except Exception as exc:
        raise Skip("cpu_failure", f"Model.forward failed: {_error_text(exc)}") from exc
    outputs, is_tuple = outputs_of(result)
    return {
        "sizes": sizes,
        "args": [value_info(a) for a in args],
        "params": [[name, tensor_info(t)] for name, t in model.named_parameters()],
        "buffers": [[name, tensor_info(t)] for name, t in model.named_buffers()],
        "outputs": [tensor_info(o) for o in outputs],
        "output_is_tuple": is_tuple,
        "elements": _elements(args) + sum(p.numel() for p in model.parameters()),
    }


def _kernelbench_checks(request: dict[str, Any], sizes: dict[str, int]) -> list[str]:
    """Run the problem on the CPU: the seed must decide the inputs and weights, the forward must be a function
    of them. Returns the buffers the forward updates (held by the reference's module, not inputs)."""
    problem = _kernelbench_load(request, sizes, "cpu")
    precision = request["precision"]
    try:
        args, model = rt.kernelbench_parts(problem, 1, "cpu")
        again, model_again = rt.kernelbench_parts(problem, 1, "cpu")
        other, model_other = rt.kernelbench_parts(problem, 2, "cpu")
    except Exception as exc:
        raise Skip("cpu_failure", f"building the inputs or the model failed: {_error_text(exc)}") from exc
    first = [*args, *rt.module_tensors(model).values()]
    if not same(first, [*again, *rt.module_tensors(model_again).values()]):
        raise Skip(
            "unseeded_generator",
            "the same seed gave other inputs or weights: the builder draws from a generator "
            "the harness does not seed (numpy, random, its own torch.Generator)",
        )
    tensors = [t for t in first if isinstance(t, torch.Tensor) and t.numel()]
    if tensors and same(first, [*other, *rt.module_tensors(model_other).values()]):
        raise Skip("seed_ignored", "other seeds gave the same inputs and weights: fresh secret inputs would not be fresh")
    args = [rt.cast(a, precision) for a in args]
    if precision in rt.PRECISIONS:
        model = model.to(rt.PRECISIONS[precision])
    before = {name: t.clone() for name, t in model.named_buffers()}
    try:
        with torch.no_grad():
            one = model(*[_clone(a) for a in args])
            two = model(*[_clone(a) for a in args])
    except Exception as exc:
        raise Skip("cpu_failure", f"Model.forward failed on the CPU: {_error_text(exc)}") from exc
    if not same(outputs_of(one)[0], outputs_of(two)[0]):
        raise Skip(
            "random_or_stateful",
            "two calls on the same inputs differ: the forward draws random numbers or "
            "keeps state between calls (dropout, noise, counters)",
        )
    return [name for name, t in model.named_buffers() if not same(t, before[name])]


def _perturbed(request: dict[str, Any], observe: Callable[[dict[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """Shapes at each perturbation that runs (one that breaks the problem's own constraints says nothing)."""
    found = []
    for sizes in request.get("perturbations", []):
        try:
            found.append(observe(sizes))
        except Exception:
            continue
    return found


def probe_kernelbench(request: dict[str, Any]) -> dict[str, Any]:
    registered_sizes: dict[str, int] = request["registered"][0]
    try:
        registered = _kernelbench_observe(request, registered_sizes, "meta")
    except Skip as skip:
        if skip.reason not in ("cpu_failure",):
            raise
        registered = _kernelbench_observe(request, registered_sizes, "cpu")  # an op without a meta kernel
    budget = int(request["budget"])
    failure: Skip | None = None
    fallback: tuple[dict[str, int], dict[str, Any]] | None = None
    for sizes in request["smoke_candidates"]:
        try:
            try:
                shapes = _kernelbench_observe(request, sizes, "meta")
            except Skip as skip:
                if skip.reason != "cpu_failure":
                    raise
                shapes = _kernelbench_observe(request, sizes, "cpu")  # an op without a meta kernel
        except Skip as skip:
            if skip.reason != "cpu_failure":
                raise
            failure = skip
            continue
        if shapes["elements"] > budget:
            if fallback is None or shapes["elements"] < fallback[1]["elements"]:
                fallback = (sizes, shapes)
            continue
        try:
            mutated = _kernelbench_checks(request, sizes)
            smoke = _kernelbench_observe(request, sizes, "cpu")
        except Skip as skip:
            if skip.reason != "cpu_failure":
                raise
            failure = skip
            continue
        break
    else:
        if fallback is None:
            raise failure or Skip("cpu_failure", "no reduced sizes to try")
        mutated = _kernelbench_checks(request, fallback[0])  # nothing fits the budget: the smallest that runs
        smoke = _kernelbench_observe(request, fallback[0], "cpu")
    extra = _perturbed(request, lambda sizes: _kernelbench_observe(request, sizes, "meta"))
    return {"registered": [registered], "smoke": [smoke], "extra": extra, "mutated_buffers": mutated}


# ---- GPU MODE ----------------------------------------------------------------------------------------------


def _gpumode_load(request: dict[str, Any], device: str) -> types.ModuleType:
    try:
        problem = rt.load(request["sources"], request["main"], {}, device)
    except Exception as exc:
        raise Skip("does_not_load", _error_text(exc)) from exc
    missing = [name for name in ("ref_kernel", "generate_input") if not callable(getattr(problem, name, None))]
    if missing:
        raise Skip("not_a_problem", f"reference.py defines no {', '.join(missing)}")
    return problem


def _flat(data: Any) -> tuple[list[Any], bool]:
    if isinstance(data, torch.Tensor):
        return [data], True
    if isinstance(data, (tuple, list)) and data:
        if any(isinstance(v, (tuple, list, dict)) for v in data):
            raise Skip("unsupported_inputs", "the data nests lists, tuples or dicts (run(...) takes tensors and numbers)")
        return list(data), False
    raise Skip("unsupported_inputs", f"generate_input returns {type(data).__name__}, not a tensor or a tuple of them")


def _gpumode_observe(request: dict[str, Any], params: dict[str, Any], device: str) -> dict[str, Any]:
    problem = _gpumode_load(request, device)
    spec = {"fixed": params, "axis_params": []}
    try:
        data = rt.gpumode_data(problem, spec, {}, 1, device)
    except Exception as exc:
        raise Skip("cpu_failure", f"generate_input failed: {_error_text(exc)}") from exc
    values, single = _flat(data)
    copies = [_meta(v) for v in values]
    try:
        with torch.no_grad():
            result = problem.ref_kernel(copies[0] if single else tuple(copies))
    except Exception:
        try:
            copies = [_clone(v) for v in values]
            with torch.no_grad():
                result = problem.ref_kernel(copies[0] if single else tuple(copies))
        except Exception as exc:
            raise Skip("cpu_failure", f"ref_kernel failed: {_error_text(exc)}") from exc
    outputs, is_tuple = outputs_of(result)
    alias = next((i for i, c in enumerate(copies) if not is_tuple and c is result), None)
    return {
        "sizes": {k: v for k, v in params.items() if type(v) is int},
        "args": [value_info(v) for v in values],
        "single": single,
        "outputs": [tensor_info(o) for o in outputs],
        "output_is_tuple": is_tuple,
        "alias": alias,
        "elements": _elements(values),
    }


def _gpumode_checks(request: dict[str, Any], params: dict[str, Any]) -> None:
    problem = _gpumode_load(request, "cpu")
    spec = {"fixed": params, "axis_params": []}
    try:
        one, again, other = (rt.gpumode_data(problem, spec, {}, seed, "cpu") for seed in (1, 1, 2))
    except Exception as exc:
        raise Skip("cpu_failure", f"generate_input failed on the CPU: {_error_text(exc)}") from exc
    if not same(_flat(one)[0], _flat(again)[0]):
        raise Skip(
            "unseeded_generator",
            "the same seed gave other data: generate_input draws from a generator the "
            "harness does not seed (numpy, random, an unseeded torch.Generator)",
        )
    values, single = _flat(one)
    if any(isinstance(v, torch.Tensor) and v.numel() for v in values) and same(values, _flat(other)[0]):
        raise Skip("seed_ignored", "other seeds gave the same data: fresh secret inputs would not be fresh")
    try:
        results = []
        for _ in range(2):
            copies = [_clone(v) for v in values]
            with torch.no_grad():
                results.append(problem.ref_kernel(copies[0] if single else tuple(copies)))
    except Exception as exc:
        raise Skip("cpu_failure", f"ref_kernel failed on the CPU: {_error_text(exc)}") from exc
    if not same(outputs_of(results[0])[0], outputs_of(results[1])[0]):
        raise Skip("random_or_stateful", "two calls of ref_kernel on the same data differ")


def probe_gpumode(request: dict[str, Any]) -> dict[str, Any]:
    registered = []
    for params in request["registered"]:
        try:
            registered.append(_gpumode_observe(request, params, "meta"))
        except Skip as skip:
            if skip.reason != "cpu_failure":
                raise
            registered.append(_gpumode_observe(request, params, "cpu"))
    smoke: list[dict[str, Any]] = []
    failure: Skip | None = None
    for params in request["smoke_candidates"]:
        if len(smoke) >= int(request["smoke_count"]):
            break
        try:
            shapes = _gpumode_observe(request, params, "cpu")
            if shapes["elements"] > int(request["budget"]):
                continue
            _gpumode_checks(request, params)
        except Skip as skip:
            if skip.reason != "cpu_failure":
                raise
            failure = skip
            continue
        smoke.append(shapes)
    if not smoke:
        raise failure or Skip("cpu_failure", "no test shape within the CPU's element budget runs")
    extra = _perturbed(request, lambda params: _gpumode_observe(request, params, "cpu"))
    return {"registered": registered, "smoke": smoke, "extra": extra, "mutated_buffers": []}


PROBES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"kernelbench": probe_kernelbench, "gpumode": probe_gpumode}


def probe(request: dict[str, Any]) -> dict[str, Any]:
    """One problem's description, or why it cannot become a task."""
    started = time.perf_counter()
    try:
        result = {"ok": True, **PROBES[request["kind"]](request)}
    except Skip as skip:
        result = {"ok": False, "skip": skip.reason, "detail": skip.detail}
    except MemoryError:
        result = {"ok": False, "skip": "too_large", "detail": "the probe ran out of memory"}
    except Exception as exc:  # the peer's code failed where no check expected it
        result = {"ok": False, "skip": "cpu_failure", "detail": _error_text(exc)}
    result["seconds"] = time.perf_counter() - started
    return result


def _in_child(request: dict[str, Any], write_fd: int) -> None:
    os.dup2(2, 1)  # the peer's prints go to stderr, never into the result stream
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    payload = json.dumps(probe(request)).encode()
    with os.fdopen(write_fd, "wb") as pipe:
        pipe.write(payload)


def run_one(request: dict[str, Any]) -> dict[str, Any]:
    """Probe in a forked child (one problem's code never shares a process with another's), within its time."""
    timeout = float(request.get("timeout_s", 120.0))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_fd)
        try:
            _in_child(request, write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    timed_out = False
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([pipe], [], [], left)
            if not ready:
                continue
            chunk = pipe.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"ok": False, "skip": "timeout", "detail": f"the probe ran past {timeout:.0f} s", "seconds": timeout}
    try:
        result: dict[str, Any] = json.loads(b"".join(chunks))
    except ValueError:
        code = os.waitstatus_to_exitcode(status)
        return {"ok": False, "skip": "crashed", "detail": f"the probe ended without a result (exit {code})", "seconds": 0.0}
    return result


def main() -> int:
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        out.write(json.dumps(run_one(request)) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
