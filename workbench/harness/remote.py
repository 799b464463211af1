"""The checker's handle on the untrusted solution process: start it sandboxed, send requests, read replies.

Every reply is untrusted input: it is validated here (types, counts) and a reply that does not follow
the protocol is the solution's failure, never the harness's. Requests have a deadline; a process that
dies or does not answer becomes `crashed` or `timeout` with what it printed last.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from workbench import paths
from workbench.harness import sandbox
from workbench.harness.report import Violation
from workbench.harness.transport import Channel, ChannelClosed, ChannelTimeout, ProtocolError

# CUDA_DEVICE_ORDER: the GPU index given below means the same GPU inside as outside (a campaign pins
# sessions by index in PCI bus order)
PASSED_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "CUDA_DEVICE_ORDER")
# Under the interpreter a kernel runs one program instance at a time in Python, each op on one small tile,
# where a BLAS or OpenMP thread pool costs more than it gives: one call of the naive Muon kernels on the
# 128x384 smoke workload took 1.94 s of wall and 3.8 s of CPU with 2 threads, 1.46 s and 1.46 s with one
# (2-core development machine; docs/harness.md, "The interpreter").
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
HOST_CODE = (
    "import sys; sys.path[:0] = {path!r}; from workbench.harness.solution_host import main; "
    "from workbench.harness.fast_exit import exit_now; exit_now(main(sys.argv))"
)


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
    launch_names: list[str]
    violations: list[Violation]
    outputs: list[dict[str, Any]]
    mutated: list[str]  # inputs that are not state and changed in the call (checked in the process)


@dataclass
class RemoteSolution:
    """One solution process for one evaluation."""

    solution: Path
    device: torch.device
    deadline: float  # time.monotonic() by which everything must be done
    timeout_s: float = 0.0  # the evaluation's whole budget, for messages
    hidden: Sequence[Path] = ()
    process: subprocess.Popen[bytes] | None = None
    channel: Channel | None = None
    sandbox_info: sandbox.SandboxInfo | None = None
    output_tail: list[str] = field(default_factory=list)
    device_in_process: torch.device | None = None  # how the process names its device (cuda:0 on a GPU)

    # -- process --------------------------------------------------------------------------------
    def start(self) -> None:
        channel, theirs = Channel.pair()
        device_arg = self.device
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "TRITON_CACHE_DIR": "/tmp/triton-cache",
            "TMPDIR": "/tmp",
        }
        for name in PASSED_ENV:
            if name in os.environ:
                env[name] = os.environ[name]
        if self.device.type == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
            env |= ONE_THREAD  # the interpreter's numpy and torch ops on small tiles: threads only spin
        else:  # the process sees its one GPU only, as cuda:0
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            ids = [v.strip() for v in visible.split(",")] if visible else [str(i) for i in range(torch.cuda.device_count())]
            env["CUDA_VISIBLE_DEVICES"] = ids[index]
            device_arg = torch.device("cuda:0")
        search_path = [p for p in sys.path if p and Path(p).is_dir() and not _holds_hidden(Path(p), self.hidden, exact=True)]
        if str(paths.IMPORT_ROOT) not in search_path:
            search_path.insert(0, str(paths.IMPORT_ROOT))
        solution_dir = Path(self.solution).resolve().parent
        argv = [sys.executable, "-I", "-c", HOST_CODE.format(path=search_path), str(theirs.fileno())]
        readable = [
            *sandbox.default_readable(),
            *(Path(p) for p in search_path if not _holds_hidden(Path(p), self.hidden)),
            Path(self.solution).resolve(),
        ]
        hidden = [*sandbox.default_hidden(self.hidden), solution_dir]
        command, self.sandbox_info = sandbox.wrap(argv, device=str(self.device), env=env, readable=readable, hidden=hidden)
        if self.sandbox_info.kind == "none":
            command, env_arg = argv, env
        else:
            env_arg = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        self.process = subprocess.Popen(
            command,
            pass_fds=[theirs.fileno()],
            env=env_arg,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
        theirs.close()
        self.channel = channel
        threading.Thread(target=self._read_output, daemon=True).start()
        self.device_in_process = device_arg

    def _read_output(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for raw in self.process.stdout:
            self.output_tail.append(raw.decode(errors="replace").rstrip("\n"))
            del self.output_tail[:-40]

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
            code = self.process.returncode
        output = "\n".join(line for line in self.output_tail if line.strip())[-2000:]
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = f"signal {number}"
            status, message = "crashed", f"the solution process died with {name}"
        elif "MemoryError" in output or "out of memory" in output.lower():
            status, message = "runtime_error", "out of memory"
        else:
            status, message = "crashed", f"the solution process exited with code {code} before answering"
        return SolutionFailure(status, message + ("\n" + output if output else ""))

    # -- requests -------------------------------------------------------------------------------
    def request(self, message: dict[str, Any], tensors: Sequence[torch.Tensor] = ()) -> tuple[dict[str, Any], list[torch.Tensor]]:
        assert self.channel is not None
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self.kill()
            raise SolutionFailure("timeout", f"the evaluation did not finish within {self.timeout_s:g} s")
        try:
            self.channel.send(message, tensors)
            reply, received = self.channel.recv(timeout=remaining, device=self.device)
        except ChannelTimeout:
            self.kill()
            raise SolutionFailure(
                "timeout", f"the evaluation did not finish within {self.timeout_s:g} s (the solution did not answer)"
            ) from None
        except ChannelClosed:
            raise self._died() from None
        except ProtocolError as exc:
            self.kill()
            raise SolutionFailure("crashed", f"the solution process broke the protocol: {exc}") from None
        if reply.get("ok") is not True:
            status = reply.get("status")
            status = status if status in ("compile_error", "runtime_error") else "runtime_error"
            raise SolutionFailure(status, str(reply.get("message", "the solution failed"))[:2000])
        return reply, received

    def load(self) -> list[Violation]:
        reply, _ = self.request(
            {"op": "load", "solution": str(Path(self.solution).resolve()), "device": str(self.device_in_process)}
        )
        return _violations(reply)

    def put(
        self, slot: int, tensors: dict[str, torch.Tensor], scalars: dict[str, Any], state: list[str], refill: bool = False
    ) -> None:
        names = list(tensors)
        self.request(
            {"op": "put", "slot": slot, "names": names, "scalars": scalars, "refill": refill, "state": state},
            [tensors[n] for n in names],
        )

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
        restore: bool = False,
        cover_ms: float = 0.0,
    ) -> CallReply:
        """One call; `cover_ms`: the blocking kernel queued before its start event (timing.py)."""
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
                "restore": restore,
                "cover_ms": cover_ms,
            }
        )
        wall_ms = (time.perf_counter() - started) * 1e3
        try:
            described = reply["outputs"]
            if not isinstance(described, list) or not all(isinstance(d, dict) for d in described):
                raise TypeError("outputs")
            return CallReply(
                ms=float(reply["ms"]),
                wall_ms=wall_ms,
                launch_ms=min(float(reply.get("launch_ms", 0.0)), wall_ms),
                launches=int(reply["launches"]),
                launch_names=[str(n) for n in reply["launch_names"]],
                violations=_violations(reply),
                outputs=described,
                mutated=[str(n) for n in reply.get("mutated", [])],
            )
        except (KeyError, TypeError, ValueError) as exc:
            self.kill()
            raise SolutionFailure("crashed", f"the solution process broke the protocol: {exc}") from None

    def fetch(self, n_outputs: int, state: list[str]) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        """The last call's outputs and state inputs, as private tensors on this process's device."""
        _, tensors = self.request({"op": "fetch"})
        return self._split(tensors, n_outputs, state)

    def sample(self, index: int) -> None:
        """Have the process keep the last call's outputs as sample `index` (no transfer now)."""
        self.request({"op": "sample", "index": index})

    def fetch_sample(self, index: int, n_outputs: int, state: list[str]) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        _, tensors = self.request({"op": "fetch_sample", "index": index})
        return self._split(tensors, n_outputs, state)

    def _split(
        self, tensors: list[torch.Tensor], n_outputs: int, state: list[str]
    ) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        names = sorted(state)
        if len(tensors) != n_outputs + len(names):
            self.kill()
            raise SolutionFailure("crashed", "the solution process broke the protocol: wrong number of tensors")
        return tensors[:n_outputs], dict(zip(names, tensors[n_outputs:], strict=True))

    def recheck(self) -> tuple[int, int]:
        """(changed, kept): how many kept outputs changed after their calls returned."""
        reply, _ = self.request({"op": "recheck"})
        try:
            return int(reply["changed"]), int(reply["kept"])
        except (KeyError, TypeError, ValueError):
            self.kill()
            raise SolutionFailure("crashed", "the solution process broke the protocol: bad recheck reply") from None

    def release(self) -> None:
        self.request({"op": "release"})

    def capture(self, slots: list[int], outputs: list[dict[str, Any]]) -> list[Violation]:
        reply, _ = self.request({"op": "capture", "slots": slots, "outputs": outputs})
        return _violations(reply)


def _violations(reply: dict[str, Any]) -> list[Violation]:
    found = reply.get("violations", [])
    if not isinstance(found, list):
        return [Violation(rule="protocol", detail="the solution process sent malformed violations")]
    out = []
    for item in found:
        try:
            out.append(Violation.model_validate(item))
        except ValueError:
            out.append(Violation(rule="protocol", detail="the solution process sent a malformed violation"))
    return out


def _holds_hidden(path: Path, hidden: Sequence[Path], exact: bool = False) -> bool:
    """True when exposing path would show a hidden path (path is it or one of its parents); with
    `exact`, only when path is itself hidden or inside a hidden path."""
    resolved = path.resolve()
    for h in [*hidden, paths.DEFAULTS["tasks"]]:
        target = Path(h).resolve()
        if exact:
            if resolved == target or target in resolved.parents:
                return True
            continue
        if resolved == target or resolved in target.parents:
            return True
    return False


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (call in a child before exec)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
