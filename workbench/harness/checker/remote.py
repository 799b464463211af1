"""The checker's handle on the untrusted solution process: start it sandboxed, send requests, read replies.

Every reply is untrusted input: it is validated here (types, counts) and a reply that does not follow
the protocol is the solution's failure, never the harness's. Requests have a deadline; a process that
dies or does not answer becomes `crashed` or `timeout` with what it printed last.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from workbench.harness.checker.host_times import descendants
from workbench.harness.checker.launch import Launched, SolutionProcess, launch
from workbench.harness.host import sandbox
from workbench.harness.protocol.replies import (
    CallReplyModel,
    DigestsReply,
    ErrorReply,
    OkReply,
    OutputDescription,
    ProtocolViolation,
    RecheckReply,
    ReleaseReply,
    ViolationsReply,
    cut_message,
    parse,
)
from workbench.harness.protocol.report import Violation
from workbench.harness.solution.transport import Channel, ChannelClosed, ChannelTimeout, ProtocolError


class SolutionFailure(Exception):
    """The solution process failed a request: carries the status the evaluation gets."""

    def __init__(self, status: str, message: str, violations: list[Violation] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.violations = violations or []


@dataclass
class CallReply:
    """What the solution process says about one call (untrusted), and the checker's own wall time."""

    ms: float
    wall_ms: float
    launch_ms: float  # the host's time to launch the call (it sizes the cover of later calls)
    launches: int
    launch_counts: dict[str, int]  # launches per Triton kernel name, as the process reports them
    violations: list[Violation]
    outputs: list[OutputDescription]
    mutated: list[str]  # inputs that are not state and changed in the call (checked in the process)
    hidden_ms: float = 0.0  # device time its work ran past the end event on other streams (stream_tails.py)
    served_ms: float = 0.0  # the process's own time from reading the request to replying (untrusted: notes only)


@dataclass
class RemoteSolution:
    """One solution process for one evaluation."""

    solution: Path
    device: torch.device
    deadline: float  # time.monotonic() by which everything must be done
    timeout_s: float = 0.0  # the evaluation's whole budget, for messages
    hidden: Sequence[Path] = ()
    process: SolutionProcess | None = None
    solution_path: str = ""  # where the process reads the solution (launch.Launched)
    channel: Channel | None = None
    sandbox_info: sandbox.SandboxInfo | None = None
    output_tail: list[str] = field(default_factory=list)
    device_in_process: torch.device | None = None  # how the process names its device (cuda:0 on a GPU)
    private_dir: Path | None = None  # the unsandboxed process's own HOME, TMPDIR and Triton cache (close() removes it)
    peak_bytes: int = 0  # the most device memory the process reported at a release since take_peak()

    # -- process --------------------------------------------------------------------------------
    def start(self, launched: Launched | None = None) -> None:
        """Adopt a process `launch` started (the checker starts it before importing torch), or start one."""
        if launched is None:
            launched = launch(self.solution, str(self.device), self.hidden)
        self.process = launched.process
        self.solution_path = launched.solution_path
        self.channel = Channel(launched.sock)
        self.sandbox_info = launched.info
        self.output_tail = launched.output_tail
        self.private_dir = launched.private_dir
        self.device_in_process = torch.device(launched.device_in_process)

    def close(self) -> None:
        if self.channel is not None:
            with contextlib.suppress(ChannelClosed, OSError):
                self.channel.send({"op": "exit"})
            self.channel.close()
            self.channel = None
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.private_dir is not None:  # the unsandboxed process's HOME, TMPDIR and Triton cache
            shutil.rmtree(self.private_dir, ignore_errors=True)
            self.private_dir = None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def _died(self) -> SolutionFailure:
        assert self.process is not None
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.wait()
        printed = "\n".join(line for line in self.output_tail if line.strip())
        output = cut_message("\n".join(printed.splitlines()[-4:]))  # its last lines: what it printed is its own
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = f"signal {number}"
            status, message = "crashed", f"the solution process died with {name}"
        elif "MemoryError" in printed or "out of memory" in printed.lower():
            status, message = "runtime_error", "out of memory"
        else:
            status, message = "crashed", f"the solution process exited with code {code} before answering"
        return SolutionFailure(status, message + ("\n" + output if output else ""))

    # -- requests -------------------------------------------------------------------------------
    def request(
        self,
        message: dict[str, Any],
        tensors: Sequence[torch.Tensor] = (),
        meanwhile: Callable[[], None] | None = None,
    ) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """Send `message`, then read the reply. `meanwhile` runs here between the two, while the solution
        process works on the request (the checker's oracle during a checked call); the reply is read
        even when it raises, so that the channel stays in step, and its exception is raised after."""
        assert self.channel is not None
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self.kill()
            raise SolutionFailure("timeout", f"the evaluation did not finish within {self.timeout_s:g} s")
        failed: BaseException | None = None
        try:
            self.channel.send(message, tensors)
            if meanwhile is not None:
                try:
                    meanwhile()
                except BaseException as exc:  # raised once the reply is in (below)
                    failed = exc
            remaining = max(self.deadline - time.monotonic(), 0.001)
            reply, received = self.channel.recv(timeout=remaining, device=self.device)
        except ChannelTimeout:
            self.kill()
            raise SolutionFailure(
                "timeout", f"the evaluation did not finish within {self.timeout_s:g} s (the solution did not answer)"
            ) from None
        except ChannelClosed:
            raise self._died() from None
        except ProtocolError as exc:
            raise self._protocol_violation(str(exc)) from None
        if failed is not None:
            raise failed
        if reply.get("ok") is not True:
            try:
                error = parse(ErrorReply, reply)
            except ProtocolViolation as exc:
                raise self._protocol_violation(str(exc)) from None
            # statuses the solution process may report of its own failure (a rule it broke inside a call is
            # its own verdict: reporting one only fails it)
            status = error.status if error.status in ("compile_error", "runtime_error", "policy_violation") else "runtime_error"
            broken = list(error.violations) if status == "policy_violation" else []
            raise SolutionFailure(status, cut_message(error.message), broken)
        return reply, received

    def _protocol_violation(self, what: str) -> SolutionFailure:
        """A reply that broke the protocol: the solution's failure (its code runs in that process)."""
        self.kill()
        return SolutionFailure("protocol_violation", f"the solution process broke the protocol: {what}")

    def _parse(self, model: type[Any], reply: dict[str, Any]) -> Any:
        try:
            return parse(model, reply)
        except ProtocolViolation as exc:
            raise self._protocol_violation(str(exc)) from None

    def pids(self) -> list[int]:
        """The solution's process tree (the sandbox's processes and the interpreter), for /proc readings."""
        return descendants(self.process.pid) if self.process is not None else []

    def init(self, inputs_source: str | None = None) -> None:
        """Set the process up (device, flush buffer, cover, guard) before the solution is imported;
        `inputs_source`: the task's inputs.py, with which the process makes timed calls' inputs (`generate`)."""
        message: dict[str, Any] = {"op": "init", "solution": self.solution_path, "device": str(self.device_in_process)}
        if inputs_source is not None:
            message["inputs_source"] = inputs_source
        reply, _ = self.request(message)
        self._parse(OkReply, reply)

    def load(self) -> list[Violation]:
        reply, _ = self.request({"op": "load", "solution": self.solution_path, "device": str(self.device_in_process)})
        return list(self._parse(ViolationsReply, reply).violations)

    def put(
        self,
        slot: int,
        tensors: dict[str, torch.Tensor],
        scalars: dict[str, Any],
        state: list[str],
        refill: bool = False,
        timed: bool = False,
        lists: dict[str, list[list[int]]] | None = None,
    ) -> None:
        """A slot's inputs; `lists`: the element shapes of each list input, whose tensor is its elements packed."""
        names = list(tensors)
        message = {"op": "put", "slot": slot, "names": names, "scalars": scalars, "refill": refill, "state": state}
        reply, _ = self.request({**message, "timed": timed, "lists": lists or {}}, [tensors[n] for n in names])
        self._parse(OkReply, reply)

    def generate(
        self,
        slot: int,
        seed: int,
        axes: dict[str, int],
        names: list[str],
        scalar_names: list[str],
        state: list[str],
        *,
        refill: bool = False,
        timed: bool = False,
        scale: float | None = None,
    ) -> None:
        """A slot's inputs made in the process by the task's make_inputs from `seed` (as `put` stores them;
        `scale`: floating inputs of 16 bits or more multiplied by it)."""
        message = {"op": "generate", "slot": slot, "seed": seed, "axes": axes, "names": names, "scalar_names": scalar_names}
        message.update({"state": state, "refill": refill, "timed": timed, "scale": scale})
        reply, _ = self.request(message)
        self._parse(OkReply, reply)

    def digests(self, slot: int, names: list[str]) -> list[int]:
        """The process's `digest` of each of the slot's tensor inputs (its word: only ever compared with
        this process's own digests, to detect a generator that differs between processes)."""
        reply, _ = self.request({"op": "digests", "slot": slot, "names": names})
        parsed: DigestsReply = self._parse(DigestsReply, reply)
        if len(parsed.digests) != len(names):
            raise self._protocol_violation("wrong number of digests")
        return list(parsed.digests)

    def call(
        self,
        slot: int,
        outputs: list[dict[str, Any]],
        *,
        override: dict[str, Any] | None = None,
        profile: bool = False,
        keep: bool = False,
        replay: bool = False,
        null: bool = False,
        timed: bool = False,
        cover_ms: float = 0.0,
        meanwhile: Callable[[], None] | None = None,
    ) -> CallReply:
        """One call; `cover_ms`: the blocking kernel queued before its start event (timing.py); `timed`:
        the inputs are not compared after the call (the checker refills them before every timed call);
        `null`: the same sequence around nothing, on no inputs (the cross-check's calibration); `meanwhile`:
        the checker's own work while the call runs (never on a timed call: its wall time is the cross-check's)."""
        if meanwhile is not None and timed:
            raise ValueError("a timed call's wall time is the cross-check's: nothing runs beside it")
        started = time.perf_counter()
        reply, _ = self.request(
            {
                "op": "call",
                "slot": slot,
                "outputs": outputs,
                "override": override or {},
                "profile": profile,
                "keep": keep,
                "replay": replay,
                "null": null,
                "timed": timed,
                "cover_ms": cover_ms,
            },
            meanwhile=meanwhile,
        )
        wall_ms = (time.perf_counter() - started) * 1e3
        parsed: CallReplyModel = self._parse(CallReplyModel, reply)
        return CallReply(
            ms=parsed.ms,
            wall_ms=wall_ms,
            launch_ms=min(parsed.launch_ms, wall_ms),
            hidden_ms=parsed.hidden_ms,
            served_ms=parsed.served_ms,
            launches=parsed.launches,
            launch_counts=dict(parsed.launch_counts),
            violations=list(parsed.violations),
            outputs=list(parsed.outputs),
            mutated=list(parsed.mutated),
        )

    def fetch(self, n_outputs: int, state: list[str]) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        """The last call's outputs and state inputs, as private tensors on this process's device."""
        reply, tensors = self.request({"op": "fetch"})
        self._parse(OkReply, reply)
        return self._split(tensors, n_outputs, state)

    def sample(self, index: int) -> None:
        """Have the process keep the last call's outputs as sample `index` (no transfer now)."""
        reply, _ = self.request({"op": "sample", "index": index})
        self._parse(OkReply, reply)

    def fetch_sample(self, index: int, n_outputs: int, state: list[str]) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        reply, tensors = self.request({"op": "fetch_sample", "index": index})
        self._parse(OkReply, reply)
        return self._split(tensors, n_outputs, state)

    def _split(
        self, tensors: list[torch.Tensor], n_outputs: int, state: list[str]
    ) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        names = sorted(state)
        if len(tensors) != n_outputs + len(names):
            raise self._protocol_violation("wrong number of tensors")
        return tensors[:n_outputs], dict(zip(names, tensors[n_outputs:], strict=True))

    def recheck(self) -> tuple[int, int]:
        """(changed, kept): how many kept outputs changed after their calls returned."""
        reply, _ = self.request({"op": "recheck"})
        parsed: RecheckReply = self._parse(RecheckReply, reply)
        return parsed.changed, parsed.kept

    def release(self) -> int:
        """Have the process drop what it kept for the workload; the most device memory it had allocated since
        the previous release (bytes, as the process's harness side reports it: a figure, not a verdict)."""
        reply, _ = self.request({"op": "release"})
        parsed: ReleaseReply = self._parse(ReleaseReply, reply)
        peak = parsed.peak_bytes
        self.peak_bytes = max(self.peak_bytes, peak)
        return peak

    def take_peak(self) -> int:
        """The most device memory the process reported at any release since the last take (bytes); starts over."""
        peak, self.peak_bytes = self.peak_bytes, 0
        return peak

    def capture(self, slots: list[int], outputs: list[dict[str, Any]]) -> list[Violation]:
        reply, _ = self.request({"op": "capture", "slots": slots, "outputs": outputs})
        return list(self._parse(ViolationsReply, reply).violations)
