"""The runtime guard around each call of the solution.

This runs in the untrusted solution process, so it is defence in depth: a solution that escapes the
static policy can switch it off, and nothing that decides the verdict depends on it alone.

While the solution runs (every call, checked or timed alike, and its import), a TorchDispatchMode
records every aten op the solution asks for. Only allocation, views and shape glue are allowed.
Triton's launcher, interpreter and autotuner make torch calls of their own: an op whose nearest
non-torch caller is Triton's code is Triton's only if it is one of the few data-movement and
bookkeeping ops Triton itself uses (TRITON_OWN_OPS); any other op is the solution's wherever it is
called from, so torch math handed to Triton as a hook cannot pass as Triton's. Triton launches are
counted through Triton's launch hook (or, under the interpreter, around the interpreter's launch).
Before and after the call the guard compares snapshots of the clocks, timers and public torch
callables, and checks that no torch mode or trace hook was left behind.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import torch
import triton
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

from workbench.harness.protocol.report import Violation
from workbench.harness.solution.host_reads import HostReadFunnel
from workbench.harness.solution.window_exit import SolutionRaised, accept_result, describe_raised, forget_traceback

TORCH_DIR = str(Path(torch.__file__).resolve().parent)
TRITON_DIR = str(Path(triton.__file__).resolve().parent)
HERE = str(Path(__file__).resolve())

# aten ops that only allocate, view, or move data without arithmetic (shape/stride glue).
ALLOWED_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "zero_",
        "view",
        "_unsafe_view",
        "reshape",
        "_reshape_alias",
        "as_strided",
        "permute",
        "transpose",
        "t",
        "expand",
        "squeeze",
        "unsqueeze",
        "slice",
        "select",
        "narrow",
        "alias",
        "detach",
        "clone",
        "contiguous",
        "unbind",
        "split",
        "split_with_sizes",
        "chunk",
        "flatten",
        "unflatten",
        "view_as",
        "expand_as",
        "movedim",
        "size",
        "stride",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "is_contiguous",
        "dim",
        "numel",
    }
)
# Ops Triton makes itself: the interpreter's copies between tensors and its host buffers, the
# autotuner's cache clearing and statistics over its own timings. Compute ops are not here.
TRITON_OWN_OPS = frozenset(
    {
        "empty",
        "new_empty",
        "empty_strided",
        "set_",
        "copy_",
        "_to_copy",
        "zero_",
        "fill_",
        "lift_fresh",
        "_local_scalar_dense",
        "quantile",
        "median",
        "mean",
        "min",
        "max",
        "detach",
        "view",
        "resize_",
    }
)


def _op_base_name(func: Any) -> str:
    """'aten.mm.default' -> 'mm'."""
    name = getattr(func, "__name__", str(func))  # e.g. 'mm.default'
    return name.split(".")[0]


def _caller_outside_torch(frame: FrameType | None) -> FrameType | None:
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(TORCH_DIR) or filename == HERE):
            return frame
        frame = frame.f_back
    return None


class _OpRecorder(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Keep `__torch_dispatch__` as written: torch otherwise wraps it to disable Dynamo, which imports
        torch._dynamo at the first op of the first guarded call (1 s on a small machine, 7 s on the GPU
        machine, inside the solution's first call). Nothing here compiles: torch.compile is not on the
        policy's allow-list."""
        return False

    def __init__(self, solution_file: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.solution_file = solution_file
        self.violations: list[Violation] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        name = _op_base_name(func)
        if name not in ALLOWED_OPS:
            caller = _caller_outside_torch(sys._getframe(1))
            by_triton = name in TRITON_OWN_OPS and caller is not None and caller.f_code.co_filename.startswith(TRITON_DIR)
            if not by_triton:
                line = caller.f_lineno if caller is not None and caller.f_code.co_filename == self.solution_file else None
                op = str(func)
                if all(v.op != op for v in self.violations):
                    self.violations.append(
                        Violation(rule="torch_compute", detail=f"torch op {op} computes outside Triton", line=line, op=op)
                    )
        return func(*args, **(kwargs or {}))


@dataclass
class LaunchCounter:
    """Counts Triton kernel launches (and their names) while installed."""

    count: int = 0
    names: list[str] = field(default_factory=list)
    streams: set[int] = field(default_factory=set)
    _uninstall: Callable[[], None] | None = None

    def _on_launch(self, metadata: Any) -> None:
        self.count += 1
        data = metadata.data if hasattr(metadata, "data") else {}
        self.names.append(str(data.get("name")))
        if data.get("stream") is not None:
            self.streams.add(int(data["stream"]))

    def install(self) -> None:
        if os.environ.get("TRITON_INTERPRET") == "1":
            self._install_interpreter()
        else:
            self._install_hook()

    def _install_hook(self) -> None:
        hooks = triton.knobs.runtime.launch_enter_hook
        if hasattr(hooks, "add"):  # a HookChain (newer Triton)
            hooks.add(self._on_launch)
            self._uninstall = lambda: hooks.remove(self._on_launch)
        else:
            previous = hooks
            triton.knobs.runtime.launch_enter_hook = self._on_launch
            self._uninstall = lambda: setattr(triton.knobs.runtime, "launch_enter_hook", previous)

    def _install_interpreter(self) -> None:
        from triton.runtime import interpreter  # noqa: PLC0415 (only under the Triton interpreter)

        original = interpreter.InterpretedFunction.run
        counter = self

        def counted_run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
            if not warmup:
                counter.count += 1
                counter.names.append(self.fn.__name__)
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

        interpreter.InterpretedFunction.run = counted_run
        self._uninstall = lambda: setattr(interpreter.InterpretedFunction, "run", original)

    def uninstall(self) -> None:
        if self._uninstall is not None:
            self._uninstall()
            self._uninstall = None


TIMER_NAMES = (
    "time.time",
    "time.time_ns",
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.process_time",
)


# Methods of torch.Tensor that comparisons and conversions go through; resolved through the class's
# bases, so a dunder added on torch.Tensor over TensorBase's counts as replaced.
TENSOR_DUNDERS = (
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__bool__",
    "__float__",
    "__int__",
    "__index__",
    "__getitem__",
    "__setitem__",
    "__matmul__",
    "__mul__",
    "__add__",
    "__sub__",
    "__truediv__",
    "__array__",
    "__torch_function__",
    "__torch_dispatch__",
    "__repr__",
    "__len__",
    "__iter__",
    "__contains__",
    "__hash__",
)


def _public_callables(module: ModuleType | type) -> dict[str, object]:
    found: dict[str, object] = {}
    for name, value in vars(module).items():
        if not name.startswith("_"):
            found[name] = value
    if isinstance(module, type):
        for name in TENSOR_DUNDERS if module is torch.Tensor else ():
            value = getattr(module, name, None)
            found[name] = getattr(value, "__func__", value)  # a classmethod is bound anew on each access
    return found


def snapshot() -> dict[str, object]:
    """The clocks, timers and torch entry points the harness relies on (the objects, compared by identity)."""
    state: dict[str, object] = {f"time.{n}": getattr(time, n) for n in (t.split(".")[1] for t in TIMER_NAMES)}
    for label, namespace in (
        ("torch", torch),
        ("torch.Tensor", torch.Tensor),
        ("torch.linalg", torch.linalg),
        ("torch.cuda", torch.cuda),
        ("torch.cuda.Event", torch.cuda.Event),
    ):
        for name, value in _public_callables(namespace).items():
            state[f"{label}.{name}"] = value
    state.pop("torch.manual_seed", None)  # torch._dynamo rewraps it when first imported; seeds live in the checker
    return state


def compare_snapshots(before: dict[str, object], after: dict[str, object]) -> list[Violation]:
    # Replaced entries count, and so do entries added to a class (torch.Tensor, torch.cuda.Event); torch
    # adds submodules to its module namespace lazily, which is harmless.
    changed = sorted(k for k in before if after.get(k) is not before[k])
    changed += sorted(k for k in after if k not in before and k.startswith(("torch.Tensor.", "torch.cuda.Event.")))
    violations = []
    for key in changed:
        rule = "patched_timer" if key.startswith("time.") or ".Event" in key or "synchronize" in key else "monkeypatch"
        violations.append(Violation(rule=rule, detail=f"{key} was replaced by the solution"))
    return violations


def hooks_left_behind() -> list[Violation]:
    """Trace/profile hooks or torch modes that the solution installed and left active."""
    found = []
    if sys.gettrace() is not None or sys.getprofile() is not None:
        found.append(Violation(rule="introspection", detail="a trace or profile hook was left installed"))
    if threading.gettrace() is not None or threading.getprofile() is not None:
        found.append(Violation(rule="introspection", detail="a thread trace or profile hook was left installed"))
    if _get_current_dispatch_mode_stack() or torch._C._len_torch_function_stack() > 0:
        found.append(Violation(rule="monkeypatch", detail="a torch function or dispatch mode was left active"))
    return found


@dataclass
class CallRecord:
    launches: int
    launch_names: list[str]
    violations: list[Violation]


class Guard:
    """Wraps one call of the solution: `with guard.watch() as record: out = run(...)`."""

    def __init__(self, solution_file: Path, baseline: dict[str, object]) -> None:
        self.solution_file = str(solution_file.resolve())
        self.baseline = baseline
        self.reads = HostReadFunnel(self.solution_file)
        self.late: list[Violation] = []  # found by a full collection between requests, reported with the next call
        self.threads = threading.active_count()

    def collect_all(self) -> None:
        """A full garbage collection under the guard (between workloads): whatever solution code a finaliser
        runs then is recorded, and reported with the next call."""
        _, record = self.call(gc.collect, require_launch=False)
        self.late = [v for v in record.violations if v.rule != "no_triton_launch"]

    def call(
        self,
        fn: Callable[..., Any],
        *args: Any,
        after: Callable[[], None] | None = None,
        require_launch: bool = True,
        accept: bool = False,
        **kwargs: Any,
    ) -> tuple[Any, CallRecord]:
        """Call fn under the guard. `after` runs as soon as fn returns, before the checks (the end event).

        Everything the solution's code does happens before `after`: with `accept`, fn's result is checked
        and turned into a `Returned` (exact tensors) here; an exception it raised (or a refused result) is
        described here from builtin data and raised as `SolutionRaised` once `after` has run. The host
        never touches the solution's objects after this returns (window_exit.py)."""
        counter = LaunchCounter()
        recorder = _OpRecorder(self.solution_file)
        raised: SolutionRaised | None = None
        result: Any = None
        self.reads.install()
        counter.install()
        try:
            with recorder:
                try:
                    result = fn(*args, **kwargs)
                    if accept:
                        result = accept_result(result)
                except SolutionRaised as refused:
                    raised = refused
                except BaseException as exc:  # described here, in the window: none of its methods is called later
                    raised = describe_raised(exc, self.solution_file)
                    forget_traceback(exc)
                    del exc
                # Cycles the call made die here, in the window: automatic collection is off in the solution
                # process (Host.init), so a finaliser of the solution's (a generator's finally) cannot run later.
                gc.collect(0)
        finally:
            counter.uninstall()
            self.reads.uninstall()
        if after is not None:
            after()
        if raised is not None:
            broken = recorder.violations + self.reads.violations
            if broken:  # the call broke a rule before it failed (a host read refused, then raised): that is the verdict
                raise SolutionRaised("policy_violation", broken[0].describe(), raised.error_type, broken)
            raise raised
        violations = list(recorder.violations) + self.reads.violations + self.late
        self.late = []
        violations += compare_snapshots(self.baseline, snapshot())
        violations += hooks_left_behind()
        if threading.active_count() > self.threads:
            violations.append(Violation(rule="threads", detail="the solution left threads running"))
        if counter.count == 0 and require_launch:
            violations.append(Violation(rule="no_triton_launch", detail="the call launched no Triton kernel"))
        if counter.streams and torch.cuda.is_available():
            current = torch.cuda.current_stream().cuda_stream
            if counter.streams - {current}:
                violations.append(Violation(rule="streams", detail="Triton kernels were launched on a side stream"))
        return result, CallRecord(counter.count, counter.names, violations)
