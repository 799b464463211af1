"""The untrusted solution process: imports solution.py and calls `run` when the checker asks.

Started by the checker inside the sandbox (`python -I -m workbench.harness.solution.host FD`, FD one end
of the message channel). It never sees the per-evaluation secret, a checked trial's seed, reference
outputs, the task's folder or where the verdict is written: it receives input tensors, calls `run` on
private device copies of them, and hands back output tensors and the inputs as the call left them. A
timed call's new values it makes itself, with the task's public inputs.py (its text sent at `init`),
from the seed the checker derives for that call and sends just before it (`generate`): the checker
checks its sampled calls against inputs it makes from the same seed, so values made differently here
only fail a check. Everything it says is
treated as untrusted by the checker, which decides the verdict from the bytes it receives.

Every call is made the same way, whatever the checker will do with it: outputs poisoned, L2 flushed
(GPU), the runtime guard installed, CUDA events around the call, a device-wide synchronisation. Only
after the call has finished does the checker decide whether to fetch its outputs (a checked call) or
not (a timed call that was not sampled), so a solution cannot tell a checked call from a timed one.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.autograd.profiler import profile as autograd_profile

from workbench.harness.protocol.report import Violation
from workbench.harness.protocol.task_files import import_file, module_from_source
from workbench.harness.solution.fast_exit import exit_now
from workbench.harness.solution.guard import ALLOWED_OPS, CallRecord, Guard, compare_snapshots, snapshot
from workbench.harness.solution.stream_tails import StreamTails
from workbench.harness.solution.timing import Clocks, CoverPlan, Sleeper, capture_call
from workbench.harness.solution.transport import DTYPES, Channel, ChannelClosed, digest, digest_many, pack, split
from workbench.harness.solution.window_exit import Returned, SolutionRaised, cut, describe_raised

PERF_COUNTER = time.perf_counter  # taken before any solution code runs
MAX_COVER_MS = CoverPlan().max_ms  # a longer cover is a malformed request


def blocking_sync() -> None:
    """Make this process's device synchronisations sleep instead of spin (CU_CTX_SCHED_BLOCKING_SYNC on
    the primary context, before torch creates it), so that its CPU time, which the checker reads from
    /proc, is its own host work and not time spent waiting for the device (crosscheck.py)."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        device = ctypes.c_int()
        if driver.cuInit(0) != 0 or driver.cuDeviceGet(ctypes.byref(device), 0) != 0:
            return
        set_flags = getattr(driver, "cuDevicePrimaryCtxSetFlags_v2", None) or driver.cuDevicePrimaryCtxSetFlags
        set_flags(device, 0x04)  # CU_CTX_SCHED_BLOCKING_SYNC
    except (OSError, AttributeError):
        return  # without it the cross-check reads spinning as host time: latencies are then the checker's


def _poison(t: torch.Tensor) -> None:
    if t.is_floating_point():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def _same_bits(a: Any, b: Any) -> bool:
    """Bitwise equality (NaN == NaN, -0 != +0), of two tensors or, element by element, two lists of them, or of
    a list and its `PackedCopy`."""
    if type(b) is PackedCopy:
        return b.matches(a)
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(_same_bits, a, b))
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    width = _BITS[a.element_size()]
    return bool(torch.equal(a.detach().contiguous().view(width), b.detach().contiguous().view(width)))


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
PACKED_RUN_VALUES = 1 << 24  # values of a list compared with its packed copy at once (bounds the temporary copy)


@dataclass(frozen=True)
class PackedCopy:
    """A copy of a list input's elements packed into one tensor (one copy, not one per element), with each
    element's shape and dtype: what `_same_bits` compares the list with after an untimed call."""

    values: torch.Tensor
    shapes: list[torch.Size]
    dtypes: list[torch.dtype]

    @staticmethod
    def of(elements: list[torch.Tensor]) -> PackedCopy:
        return PackedCopy(pack(elements), [t.shape for t in elements], [t.dtype for t in elements])

    def matches(self, elements: Any) -> bool:
        """Whether `elements` is a list of tensors of the copied shapes and dtypes holding the copied bits."""
        if not isinstance(elements, list) or len(elements) != len(self.shapes):
            return False
        if any(t.shape != s or t.dtype != d for t, s, d in zip(elements, self.shapes, self.dtypes, strict=True)):
            return False
        width = _BITS[self.values.element_size()]
        start = end = offset = 0
        while start < len(elements):  # a run of elements of about PACKED_RUN_VALUES values against its slice
            count = 0
            while end < len(elements) and (end == start or count + elements[end].numel() <= PACKED_RUN_VALUES):
                count += elements[end].numel()
                end += 1
            run = pack(elements[start:end]) if count else self.values[:0]
            if not torch.equal(run.view(width), self.values[offset : offset + count].view(width)):
                return False
            start, offset = end, offset + count
        return True


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors an input holds: itself, a list's elements, or none (a scalar)."""
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for t in value if isinstance(t, torch.Tensor)] if isinstance(value, (list, tuple)) else []


@dataclass(frozen=True)
class Misfit:
    """In place of the outputs when run returned the wrong number or kind of them: what it returned."""

    kind: str


SMALL_POOL_BYTES = 1 << 20  # the caching allocator's small-block pool holds allocations up to this size


def separate(parts: list[torch.Tensor], device: torch.device, keep: list[torch.Tensor]) -> list[torch.Tensor]:
    """A list input's elements, each copied into an allocation of its own with a spacer of random size
    allocated after it (in the allocator pool of the element's size; the spacers go to `keep`): however the
    checker's tensors were laid out, the elements here never form one contiguous buffer, so a kernel that
    treats the list as one flat array reads the spacers and fails."""
    out = []
    for part in parts:
        out.append(torch.empty(part.shape, dtype=part.dtype, device=device))
        nbytes = part.numel() * part.element_size()
        gap = 512 * random.randint(1, 16) + (SMALL_POOL_BYTES if nbytes >= SMALL_POOL_BYTES else 0)
        keep.append(torch.empty(gap, dtype=torch.uint8, device=device))
    copy_all(out, parts)
    return out


# Taken before any solution code runs: the guard's snapshot covers torch's public names only, so a solution
# that replaced torch._foreach_copy_ (a refill that keeps the previous call's values) would go unseen.
FOREACH_COPY = torch._foreach_copy_


def copy_all(buffers: Sequence[torch.Tensor], values: Sequence[torch.Tensor]) -> None:
    """buffer.copy_(value) for each pair, many small ones in one multi-tensor launch (the same dtype, device and
    size each pair, which every caller has checked)."""
    if buffers:
        FOREACH_COPY(list(buffers), list(values))


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    a0, b0 = a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()
    a1, b1 = a0 + a.untyped_storage().nbytes(), b0 + b.untyped_storage().nbytes()
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def _fresh_lists(args: dict[str, Any]) -> dict[str, Any]:
    """`args` with each list input as a new list of the same tensors (appending to or reordering the list a
    call receives leaves the slot's own list as it was)."""
    return {name: list(value) if isinstance(value, list) else value for name, value in args.items()}


class HeldReplies:
    """The channel as the handlers see it: a reply is held until the loop releases it, after the request's
    handler has returned and the request's tensors and the handler's temporaries are freed.

    Freeing is work too (a refill of 1,164 list tensors frees as many copies and spacers: 3 ms measured on an
    H100). Done after the reply, it would run while the checker's clock times the next request, a timed call
    among them, and the wall-clock cross-check would charge the harness's own work to the solution."""

    def __init__(self, wire: Channel) -> None:
        self.wire = wire
        self.pending: list[tuple[dict[str, Any], list[torch.Tensor]]] = []
        self.received_at: float | None = None  # when the request being served was read (PERF_COUNTER)

    def send(self, message: dict[str, Any], tensors: Sequence[torch.Tensor] = ()) -> None:
        self.pending.append((message, list(tensors)))

    def recv(self, device: torch.device | str = "cpu") -> tuple[dict[str, Any], list[torch.Tensor]]:
        return self.wire.recv(device=device)

    def release(self) -> None:
        """Send the held replies, in order."""
        held, self.pending = self.pending, []
        while held:
            message, tensors = held.pop(0)
            if "host_ms" in message and self.received_at is not None:  # a call's reply: how long it was served here
                message["served_ms"] = (PERF_COUNTER() - self.received_at) * 1e3
            self.wire.send(message, tensors)
            del message, tensors


class Host:
    """State of the solution process between messages."""

    def __init__(self, channel: Channel) -> None:
        self.channel = HeldReplies(channel)
        self.device = torch.device("cpu")
        self.module: ModuleType | None = None
        self.guard: Guard | None = None
        self.slots: dict[int, dict[str, Any]] = {}  # slot -> input name -> private tensor or scalar
        self.last: tuple[int, list[Any]] | None = None  # (slot, outputs) of the last call
        self.kept: list[tuple[Any, torch.Tensor]] = []  # (output, a copy) of earlier checked calls
        self.pristine: dict[int, dict[str, Any]] = {}  # slot -> copies of its tensor (and list) inputs
        self.spacers: dict[int, list[torch.Tensor]] = {}  # slot -> the allocations between list elements
        self.state_names: set[str] = set()
        self.samples: dict[int, tuple[list[Any], list[torch.Tensor]]] = {}  # sampled timed calls
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.graph_outputs: dict[int, list[Any]] = {}
        self.flush: torch.Tensor | None = None
        self.sleeper: Sleeper | None = None
        self.tails: StreamTails | None = None
        self.baseline: dict[str, object] = {}
        self.solution_file = ""
        self.inputs_module: ModuleType | None = None  # the task's inputs.py, for `generate`

    # -- messages ------------------------------------------------------------------------------
    def serve(self) -> None:
        handlers: dict[str, Callable[[dict[str, Any], list[torch.Tensor]], None]] = {
            "init": self.init,
            "load": self.load,
            "put": self.put,
            "generate": self.generate,
            "digests": self.digests,
            "call": self.call,
            "fetch": self.fetch,
            "capture": self.capture,
            "recheck": self.recheck,
            "release": self.release,
            "sample": self.sample,
            "fetch_sample": self.fetch_sample,
        }
        while True:
            try:
                message, tensors = self.channel.recv(device=self.device)
            except ChannelClosed:
                return
            self.channel.received_at = PERF_COUNTER()
            op = message.get("op")
            if op == "exit":
                return
            handler = handlers.get(str(op))
            if handler is None:
                self.channel.send({"ok": False, "status": "runtime_error", "message": f"unknown request {op!r}"})
                self.channel.release()
                continue
            try:
                handler(message, tensors)
            except (KeyError, TypeError, ValueError) as exc:  # a malformed request: the checker's bug
                self.channel.send({"ok": False, "status": "runtime_error", "message": f"bad request {op!r}: {exc!r}"})
            finally:
                del message, tensors  # the request's tensors and the handler's temporaries go before its reply
                self.channel.release()

    def _run(self) -> Callable[..., Any]:
        assert self.module is not None
        return vars(self.module)["run"]  # type: ignore[no-any-return]

    def init(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """Set up the device, the flush buffer, the cover and the guard before any solution code runs.

        The checker calibrates its null calls right after this, while the process runs nothing but the
        harness: what a call costs beside the solution's work is measured before the solution can pad it."""
        self.device = torch.device(message["device"])
        if self.device.type == "cuda":
            blocking_sync()
            torch.cuda.set_device(self.device)
            props = torch.cuda.get_device_properties(self.device)
            l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
            self.flush = torch.empty(2 * l2, dtype=torch.int8, device=self.device)
            self.sleeper = Sleeper(Clocks(PERF_COUNTER, torch.cuda.Event, torch.cuda.synchronize))  # before solution code
            self.tails = StreamTails(self.device)  # every stream the solution can reach, before its code runs
        if os.environ.get("TRITON_INTERPRET") == "1":
            from workbench.harness.solution import interpreter_fix  # noqa: PLC0415 (only under the Triton interpreter)

            interpreter_fix.install()
        self.solution_file = str(Path(message["solution"]).resolve())
        if message.get("inputs_source") is not None:  # before any solution code runs
            self.inputs_module = module_from_source(str(message["inputs_source"]), "_d2k_task_inputs", "inputs.py")
        self.baseline = snapshot()
        self.guard = Guard(Path(self.solution_file), self.baseline)
        # Everything alive now is the harness's, torch's and Triton's (no solution code has run): frozen, a
        # collection never walks it again, so the full one between workloads costs microseconds, not 50-90 ms.
        gc.freeze()
        gc.disable()  # collections run inside the guard only (Guard.call, Guard.collect_all): the window rule
        self.channel.send({"ok": True})

    def load(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """Import the solution under the guard; report import failures and patched torch entry points."""
        if self.guard is None:
            self.channel.send({"ok": False, "status": "runtime_error", "message": "load before init"})
            return
        holder: dict[str, ModuleType] = {}

        def do_import() -> None:
            holder["module"] = import_file(Path(self.solution_file), "solution")

        try:
            _, record = self.guard.call(do_import, require_launch=False)
        except SolutionRaised as raised:
            if raised.status != "policy_violation":
                raised.status = "compile_error"  # the import failed
            self.channel.send(raised.reply())
            return
        self.module = holder["module"]
        violations = record.violations + compare_snapshots(self.baseline, snapshot())
        if not callable(vars(self.module).get("run")):  # the module's own dict: no module __getattr__ is asked
            self.channel.send({"ok": False, "status": "compile_error", "message": "the solution defines no run(...) function"})
            return
        self.channel.send({"ok": True, "violations": [v.model_dump() for v in violations]})

    def put(self, message: dict[str, Any], tensors: list[torch.Tensor]) -> None:
        """Inputs of one slot: new tensors, or new values written into the slot's buffers (refill)."""
        names: list[str] = message["names"]
        if len(names) != len(tensors):
            raise ValueError("one tensor per name")
        values: dict[str, Any] = dict(zip(names, tensors, strict=True))
        spacers: list[torch.Tensor] = []
        refill = self._refills(message)
        for name, shapes in dict(message.get("lists") or {}).items():  # a list came packed: its elements apart
            parts = split(values[name], shapes)
            values[name] = parts if refill else separate(parts, self.device, spacers)  # a refill copies into the slot's
        self._store(message, values, dict(message.get("scalars", {})), spacers)
        self.channel.send({"ok": True})

    def generate(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """A slot's inputs made here by the task's make_inputs from the seed the checker sends (nothing
        crosses the channel), as `put` would store them: new tensors, or new values written into the slot's
        buffers (refill); floating inputs of 16 bits or more multiplied by `scale` where one is given (the
        checker's scaled trial). A value of another shape or dtype than the slot's buffer is an error."""
        if self.inputs_module is None:
            self.channel.send({"ok": False, "status": "runtime_error", "message": "generate before init gave the task's inputs"})
            return
        names: list[str] = message["names"]
        try:
            made = self.inputs_module.make_inputs(dict(message["axes"]), int(message["seed"]), self.device)
        except Exception as exc:
            raised = describe_raised(exc, self.solution_file)  # the task's inputs.py (a solution may have broken torch)
            self.channel.send({"ok": False, "status": raised.status, "message": "making a trial's inputs: " + raised.message})
            return
        wanted = [*names, *message.get("scalar_names", [])]
        if not all(n in made for n in wanted) or not all(_tensors(made[n]) for n in names):
            self.channel.send({"ok": False, "status": "runtime_error", "message": "the made inputs do not match the request"})
            return
        scale = message.get("scale")
        scalars = {n: made[n] for n in wanted if n not in names}
        tensors: dict[str, Any] = {}
        spacers: list[torch.Tensor] = []
        refill = self._refills(message)
        for name in names:
            if isinstance(made[name], (list, tuple)):  # a list's elements apart, as `put` gives them
                # (a refill copies them into the slot's own elements: made here, they are this process's already)
                tensors[name] = list(made[name]) if refill else separate(list(made[name]), self.device, spacers)
            else:
                tensors[name] = made[name].clone(memory_format=torch.contiguous_format)  # a storage of its own
            for value in _tensors(tensors[name]):
                if scale is not None and value.is_floating_point() and value.element_size() >= 2:
                    value.mul_(float(scale))
        del made
        try:
            self._store(message, tensors, scalars, spacers)
        except ValueError as exc:
            self.channel.send({"ok": False, "status": "runtime_error", "message": str(exc)})
            return
        self.channel.send({"ok": True})

    def _refills(self, message: dict[str, Any]) -> bool:
        """Whether a `put` or `generate` writes new values into the buffers its slot already has."""
        return bool(message.get("refill")) and int(message["slot"]) in self.slots

    def _store(
        self, message: dict[str, Any], tensors: dict[str, Any], scalars: dict[str, Any], spacers: list[torch.Tensor]
    ) -> None:
        """Keep a slot's inputs: new tensors, or (refill) their values written into the slot's buffers,
        which keep their addresses (a graph captured on the slot reads them). A copy of each is kept to
        compare after an untimed call (input mutation)."""
        slot = int(message["slot"])
        self.state_names = set(message.get("state", []))
        current = self.slots.get(slot)
        refill = self._refills(message) and current is not None
        values: dict[str, Any] = dict(scalars)
        for name, t in tensors.items():
            if refill and current is not None:
                buffers, news = _tensors(current.get(name)), _tensors(t)
                fits = len(buffers) == len(news) and all(b.shape == n.shape for b, n in zip(buffers, news, strict=False))
                if not fits or any(b.dtype != n.dtype for b, n in zip(buffers, news, strict=False)):
                    raise ValueError(f"input {name!r} does not fit the slot's buffer")
                copy_all(buffers, news)
                values[name] = current[name]
            else:
                values[name] = t
        self.slots[slot] = values
        if not refill:
            self.spacers[slot] = spacers
        if message.get("timed"):  # a timed call's inputs are not compared after it: no copy to keep
            self.pristine.pop(slot, None)
        else:
            self.pristine[slot] = {
                name: PackedCopy.of(values[name]) if isinstance(values[name], list) else values[name].clone() for name in tensors
            }
        if not refill:  # a graph keeps reading the slot's buffers: refilled values reach it
            self.graphs.pop(slot, None)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def digests(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """The `digest` of each of a slot's tensor inputs as they are now, in the order of `names`: the
        checker compares the first values `generate` made for a workload with its own."""
        current = self.slots.get(int(message["slot"]), {})
        names: list[str] = message["names"]
        if not all(_tensors(current.get(n)) for n in names):
            self.channel.send({"ok": False, "status": "runtime_error", "message": "no such slot inputs"})
            return
        found = [digest_many(current[n]) if isinstance(current[n], list) else digest(current[n]) for n in names]
        self.channel.send({"ok": True, "digests": found})

    def _prealloc(self, specs: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        outs = {}
        for spec in specs:
            if spec["mode"] == "preallocated":
                t = torch.empty(spec["shape"], dtype=DTYPES[spec["dtype"]], device=self.device)
                _poison(t)
                outs[spec["name"]] = t
        blocks = []  # fill memory the caching allocator hands out next: unwritten outputs show as NaN
        for spec in specs:
            if spec["mode"] == "return":
                block = torch.empty(spec["shape"], dtype=DTYPES[spec["dtype"]], device=self.device)
                _poison(block)
                blocks.append(block)
        del blocks
        return outs

    def call(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """One call of run on a slot's inputs, timed and guarded; the outputs are kept for `fetch`."""
        assert self.guard is not None
        slot = int(message["slot"])
        specs: list[dict[str, Any]] = message["outputs"]
        args = {} if message.get("null") else dict(self.slots[slot])
        args.update(message.get("override", {}))
        prealloc = self._prealloc(specs)
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.synchronize(self.device)
        begin = torch.cuda.Event(enable_timing=True) if cuda else None
        end = torch.cuda.Event(enable_timing=True) if cuda else None
        profiler = None
        if message.get("profile") and cuda:
            profiler = call_profiler()
            profiler.__enter__()
        started = PERF_COUNTER()
        launching = started
        ended: list[float] = []

        def stop() -> None:
            if end is not None:
                end.record()
            ended.append(PERF_COUNTER())
            if self.tails is not None:  # every stream's event, then a probe: work left running shows (stream_tails.py)
                self.tails.mark()

        try:
            if self.flush is not None:
                self.flush.zero_()  # queued: evicts L2
            if self.sleeper is not None:  # the device waits while the host launches the call (timing.py)
                self.sleeper.sleep(min(float(message.get("cover_ms", 0.0)), MAX_COVER_MS))
            launching = PERF_COUNTER()
            if begin is not None:
                begin.record()
            if message.get("null") and message.get("replay"):  # a replay's sequence around nothing (no guard)
                stop()
                result: Any = []
                record = CallRecord(0, [], [])
            elif message.get("null"):  # the same sequence around nothing: the checker's calibration
                result, record = self.guard.call(lambda: None, after=stop, require_launch=False)
            elif message.get("replay"):
                self.graphs[slot].replay()
                stop()
                result, record = self.graph_outputs[slot], CallRecord(0, [], [])
            else:  # a list input is passed as a new list object: the call cannot rearrange the slot's
                inputs: dict[str, Any] = {**_fresh_lists(args), **prealloc}
                result, record = self.guard.call(self._run(), after=stop, accept=True, **inputs)
            if cuda:
                torch.cuda.synchronize()
        except SolutionRaised as raised:  # described inside the window, from builtin data (window_exit.py)
            if cuda:
                torch.cuda.synchronize()
            if profiler is not None:
                profiler.__exit__(None, None, None)
            self.last = None
            self.channel.send(raised.reply())
            return
        host_ms = (PERF_COUNTER() - started) * 1e3
        hidden_ms = self.tails.hidden_ms() if self.tails is not None and ended else 0.0
        if profiler is not None:
            profiler.__exit__(None, None, None)
            record.violations.extend(foreign_kernels(profiler.function_events, record))
        ms = begin.elapsed_time(end) if begin is not None and end is not None else (ended[0] - started) * 1e3
        if message.get("null"):
            outputs: list[Any] = []
        elif message.get("replay"):  # the graph's outputs, arranged as the specs list them when it was captured
            outputs = list(result)
        else:
            outputs = self._outputs(result, specs, prealloc)
        self.last = (slot, outputs)
        plain = [o for o in outputs if type(o) is torch.Tensor]
        if message.get("keep"):
            self.kept.extend((o, o.clone()) for o in plain)
        # Checked calls compare each input with its pristine copy. Timed and null calls do not: the
        # checker refills a timed call's inputs with fresh values before it and never reads them after,
        # and its wall-clock cross-check subtracts null calls made before the solution was imported.
        mutated = [
            name
            for name, original in ({} if message.get("timed") else self.pristine.get(slot, {})).items()
            if name not in self.state_names and not _same_bits(args[name], original)
        ]
        self.channel.send(
            {
                "ok": True,
                "ms": ms,
                "host_ms": host_ms,
                "launch_ms": (ended[0] - launching) * 1e3,
                "hidden_ms": hidden_ms,
                "launches": record.launches,
                "launch_counts": dict(Counter(record.launch_names)),
                "violations": [v.model_dump() for v in record.violations],
                "outputs": [self._describe(out, args) for out in outputs],
                "mutated": mutated,
            }
        )

    def _outputs(self, result: Returned, specs: list[dict[str, Any]], prealloc: dict[str, torch.Tensor]) -> list[Any]:
        """The outputs in the specs' order: returned tensors (checked in the window) and preallocated ones; a
        result of the wrong shape is one placeholder naming what it was (`Misfit`), described as such."""
        returned = [s for s in specs if s["mode"] == "return"]
        if len(returned) == 1 and result.single:
            values = list(result.tensors)
        elif not returned:
            values = []
        elif len(returned) > 1 and not result.single and result.kind != "none" and len(result.tensors) == len(returned):
            values = list(result.tensors)
        else:
            return [Misfit(result.kind if result.kind != "none" else "NoneType")]  # the count is wrong
        return [values.pop(0) if s["mode"] == "return" else prealloc[s["name"]] for s in specs]

    def _describe(self, out: Any, args: dict[str, Any]) -> dict[str, Any]:
        if type(out) is Misfit:
            return {"kind": out.kind}
        if type(out) is not torch.Tensor:  # unreachable: what run returns is checked in the window
            return {"kind": "not a tensor"}
        aliases = [n for n, value in args.items() if any(_overlaps(out, t) for t in _tensors(value))]
        return {
            "kind": "tensor",
            "shape": list(out.shape),
            "dtype": str(out.dtype).removeprefix("torch."),
            "device": out.device.type,
            "contiguous": out.is_contiguous(),
            "aliases": aliases,
        }

    def _state_after(self, slot: int) -> list[torch.Tensor]:
        """The state inputs as the call left them (sorted by name); a list's elements packed into one tensor."""
        values = [self.slots[slot][n] for n in sorted(self.state_names)]
        return [pack(v) if isinstance(v, list) else v for v in values]

    def fetch(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """The last call's outputs and state inputs (sorted by name), as plain tensors."""
        if self.last is None:
            self.channel.send({"ok": False, "message": "no call to fetch"})
            return
        slot, outputs = self.last
        tensors = [o for o in outputs if type(o) is torch.Tensor]
        if len(tensors) != len(outputs):
            self.channel.send({"ok": False, "message": "an output is not a plain tensor"})
            return
        self.channel.send({"ok": True}, tensors + self._state_after(slot))

    def sample(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """Keep the last call's outputs (and state) as sampled timed call number `index`, for later."""
        if self.last is None:
            self.channel.send({"ok": False, "message": "no call to sample"})
            return
        slot, outputs = self.last
        # Copies, as the call left them: a graph replays into the same output tensors on every call of its
        # slot, and every timed call's inputs are new, so a later replay would overwrite a kept sample.
        kept = [o.clone() if type(o) is torch.Tensor else o for o in outputs]
        self.samples[int(message["index"])] = (kept, [t.clone() for t in self._state_after(slot)])
        self.channel.send({"ok": True})

    def fetch_sample(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        outputs, state = self.samples.pop(int(message["index"]))
        tensors = [o for o in outputs if type(o) is torch.Tensor]
        if len(tensors) != len(outputs):
            self.channel.send({"ok": False, "message": "an output is not a plain tensor"})
            return
        self.channel.send({"ok": True}, tensors + state)

    def recheck(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """How many kept outputs changed since their calls returned (recycled output buffers)."""
        changed = sum(not _same_bits(out, copy) for out, copy in self.kept)
        self.channel.send({"ok": True, "changed": changed, "kept": len(self.kept)})

    def release(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        self.kept.clear()
        self.last = None
        self.slots.clear()
        self.spacers.clear()
        self.pristine.clear()
        self.samples.clear()
        self.graphs.clear()
        self.graph_outputs.clear()
        if self.guard is not None:
            self.guard.collect_all()
        peak = 0
        if self.device.type == "cuda":
            peak = torch.cuda.max_memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            torch.cuda.empty_cache()
        self.channel.send({"ok": True, "peak_bytes": peak})

    def capture(self, message: dict[str, Any], _: list[torch.Tensor]) -> None:
        """CUDA-graph capture of one call per slot (timing mode `graph`), run under the guard."""
        assert self.guard is not None
        violations: list[Violation] = []
        specs: list[dict[str, Any]] = message["outputs"]
        try:
            for slot in message["slots"]:
                prealloc = self._prealloc(specs)
                inputs: dict[str, Any] = {**_fresh_lists(self.slots[int(slot)]), **prealloc}
                graph, (result, record) = capture_call(functools.partial(self.guard.call, self._run(), accept=True, **inputs))
                violations += record.violations
                self.graphs[int(slot)] = graph
                self.graph_outputs[int(slot)] = self._outputs(result, specs, prealloc)
            torch.cuda.synchronize()
        except SolutionRaised as raised:
            self.channel.send(raised.reply("graph capture failed: "))
            return
        except RuntimeError as exc:  # the capture itself failed (torch's own error, not the solution's object)
            self.channel.send({"ok": False, "status": "runtime_error", "message": "graph capture failed: " + cut(str(exc))})
            return
        self.channel.send({"ok": True, "violations": [v.model_dump() for v in violations]})


def call_profiler() -> Any:
    """The profiler of a profiled call: torch.autograd's with Kineto (CPU ops and the CUDA kernels they
    launched). Not torch.profiler.profile, whose start reads an inductor setting through
    `hasattr(torch, "_inductor")`, which imports torch._inductor and torch._dynamo: 2-6 s inside the
    re-check on the GPU machine, 4 s on a small CPU machine."""
    return autograd_profile(use_cpu=True, use_device="cuda", use_kineto=True)


def foreign_kernels(events: Any, record: CallRecord) -> list[Violation]:
    """GPU kernels of a profiled call that are neither its Triton launches nor issued by an allowed op.

    A kernel is attributed to the outermost aten op on the CPU side that launched it; kernels of the
    allocation and glue ops the policy allows (zeros, zero_, contiguous, clone) are allowed.
    """
    launched = set(record.launch_names)
    allowed_by_op: set[str] = set()
    attributed: set[str] = set()
    for event in events:
        kernels = getattr(event, "kernels", None) or []
        if not kernels:
            continue
        outermost = None
        node = event
        while node is not None:
            if str(node.name).startswith("aten::"):
                outermost = node.name
            node = getattr(node, "cpu_parent", None)
        for kernel in kernels:
            attributed.add(kernel.name)
            if outermost is not None and outermost.removeprefix("aten::") in ALLOWED_OPS:
                allowed_by_op.add(kernel.name)
    foreign = set()
    for event in events:
        if not str(getattr(event, "device_type", "")).endswith("CUDA"):
            continue
        name = event.name
        if any(name.startswith(n) for n in launched) or name in allowed_by_op:
            continue
        if name.startswith(("Memset", "Memcpy", "[memory]")):
            continue
        foreign.add(name)
    if not foreign:
        return []
    names = ", ".join(sorted(foreign)[:3])
    return [Violation(rule="non_triton_kernel", detail=f"the GPU ran kernels that are not the call's Triton launches: {names}")]


def main(argv: list[str]) -> int:
    channel = Channel.from_fd(int(argv[1]))
    try:
        Host(channel).serve()
    finally:
        channel.close()
    return 0


if __name__ == "__main__":
    exit_now(main(sys.argv))  # no teardown: frozen objects are never freed, and the kernel frees the rest
