"""Start the sandboxed solution process before the checker imports torch.

The checker's first act after reading the request and the solution's source is to start the solution
process (`launch`), so that the two interpreters' start and their imports of torch run at the same time
(about 1.5 s each on a small machine). Until the checker sends `init`, the process runs only the
harness's own code (`solution/host.py`): it imports torch and waits; it touches no device and has not
imported the solution.

Two ways to start it, the same sandbox either way (host/solution_plan.py): the plain start, a fresh bwrap
and interpreter (`launch`); and the warm start (`launch_warm`), where the host's pool keeps a zygote that
has imported torch inside that very sandbox and forks each evaluation's process into namespaces of its own
(solution/zygote.py says how that stays fresh). The warm start is taken only where the checker's own
digest of the sandbox equals the one the host started the zygote for; anything else falls back to the
plain start. Imports only the standard library and torch-free harness modules.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from workbench.harness.host import sandbox, solution_plan
from workbench.harness.host.child import die_with_parent
from workbench.harness.protocol.limits import RESOURCE_LIMITS

# Without the sandbox the process gets fresh folders of its own for HOME, TMPDIR and the Triton cache,
# removed by close(); named like the evaluation's scratch with the checker's pid, so that the next
# evaluation's stale-scratch sweep (evaluate.remove_stale_scratch) removes them if the checker was killed
PRIVATE_PREFIX = "d2k-eval-{pid}-solution-"
PRIVATE_DIRS = {"HOME": "home", "TMPDIR": "tmp", "TRITON_CACHE_DIR": "triton-cache"}
WARM_START_S = 60.0  # the first evaluation of a new zygote waits for its imports
MAX_MESSAGE = 65536


class SolutionProcess(Protocol):
    """What the checker uses of the solution process: subprocess.Popen's part, or `WarmProcess`."""

    pid: int
    returncode: int | None
    stdout: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


class WarmProcess:
    """A solution process started by a zygote's keeper (solution/zygote.py): `pid` is the keeper's (the
    solution process is its child, for /proc readings); the exit status is the keeper's report; kill asks
    the keeper, which kills the process's whole pid namespace (as does closing the connection)."""

    def __init__(self, conn: socket.socket, pid: int, stdout: IO[bytes]) -> None:
        self.conn = conn
        self.pid = pid
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None
        self._ended = threading.Event()
        threading.Thread(target=self._read, name="warm-solution", daemon=True).start()

    def _read(self) -> None:
        code = -9  # the keeper ended without a report: its solution process was killed with it
        with contextlib.suppress(OSError, ValueError):
            while data := self.conn.recv(MAX_MESSAGE):
                message = json.loads(data)
                if "exit" in message:
                    code = int(message["exit"])
                    break
        self.returncode = code
        self._ended.set()
        self.conn.close()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"solution process (keeper {self.pid})", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self.conn.send(json.dumps({"op": "kill"}).encode())
            with contextlib.suppress(OSError):
                self.conn.shutdown(socket.SHUT_WR)  # the keeper kills on end of input too


@dataclass
class Launched:
    """A started solution process: the checker's end of the channel's socket, and what the sandbox did."""

    process: SolutionProcess
    sock: socket.socket
    info: sandbox.SandboxInfo
    device_in_process: str  # how the process names its device ("cuda:0" on a GPU: it sees only its own)
    solution_path: str  # where the process reads the solution (the warm start's copy lies elsewhere)
    private_dir: Path | None = None  # the unsandboxed process's own HOME, TMPDIR and Triton cache
    output_tail: list[str] = field(default_factory=list)  # its last 40 lines of output

    def kill(self) -> None:
        """End the process (a failure before the checker adopted it) and remove its private folders."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.sock.close()
        self.remove_private_dir()

    def remove_private_dir(self) -> None:
        if self.private_dir is not None:
            shutil.rmtree(self.private_dir, ignore_errors=True)
            self.private_dir = None


def launch(solution: Path, device: str, hidden: Sequence[Path]) -> Launched:
    """Start the solution process for `solution` on `device` ("cpu", "cuda" or "cuda:N") in the sandbox."""
    solution = Path(solution).resolve()
    plan = solution_plan.plan(solution, device, hidden)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # The allow-list (sandbox.isolate): the interpreter, only the package's solution-side modules and
    # the solution file; the import path names only what is bound (the code is on the command line).
    argv = plan.host_argv(sys.executable, theirs.fileno())
    started = sandbox.isolate(argv, device=device, env=dict(plan.env), readable=plan.plain_readable(solution), hidden=plan.hidden)
    private_dir = None
    try:
        if started.info.kind == "none":  # no private /tmp: fresh folders of its own (0700), gone after close()
            private_dir = Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX.format(pid=os.getpid())))
            for name, folder in PRIVATE_DIRS.items():
                (private_dir / folder).mkdir(mode=0o700)
                started.env[name] = str(private_dir / folder)
        process = subprocess.Popen(
            started.command,
            executable=started.executable,
            pass_fds=[theirs.fileno(), *started.pass_fds],
            env=started.env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
    except BaseException:
        ours.close()
        if private_dir is not None:
            shutil.rmtree(private_dir, ignore_errors=True)
        raise
    finally:
        started.close()
        theirs.close()
    launched = Launched(process, ours, started.info, plan.device_in_process, str(solution), private_dir)
    threading.Thread(target=_read_output, args=(launched,), daemon=True).start()
    return launched


def launch_warm(conn: socket.socket, digest: str, solution: Path, device: str, hidden: Sequence[Path]) -> Launched | None:
    """Start the solution process through the zygote at the other end of `conn` (started by the host for
    the sandbox `digest`), or None (and `conn` closed) where this evaluation's sandbox is another or the
    zygote could not start it: the caller then uses `launch`."""
    solution = Path(solution).resolve()
    plan = solution_plan.plan(solution, device, hidden)
    info = sandbox.status(device)
    if info.kind != "bubblewrap" or plan.warm_digest() != digest:
        conn.close()
        return None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    output_read, output_write = os.pipe()
    solution_fd = os.open(solution, os.O_RDONLY | os.O_CLOEXEC)
    limits = {name: list(resource.getrlimit(which)) for name, which in RESOURCE_LIMITS.items()}
    request = {"op": "start", "name": solution.name, "limits": limits}
    adopted = False
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        socket.send_fds(conn, [json.dumps(request).encode()], [theirs.fileno(), output_write, solution_fd])
        reply, keeper_pid = _first_reply(conn, time.monotonic() + WARM_START_S)
        if reply is None or reply.get("started") is not True or keeper_pid is None:
            return None
        process = WarmProcess(conn, keeper_pid, open(output_read, "rb"))  # noqa: SIM115 (the reader thread owns it)
        adopted = True
    except OSError:
        return None
    finally:
        theirs.close()
        os.close(output_write)
        os.close(solution_fd)
        if not adopted:
            conn.close()
            ours.close()
            os.close(output_read)
    detail = info.detail.replace("read-only root", "empty read-only root (system folders, the interpreter and named files only)")
    warm_info = sandbox.SandboxInfo("bubblewrap", detail + "; warm start: its own namespaces, forked from a zygote")
    launched = Launched(process, ours, warm_info, plan.device_in_process, str(reply["solution"]))
    threading.Thread(target=_read_output, args=(launched,), daemon=True).start()
    return launched


def _first_reply(conn: socket.socket, deadline: float) -> tuple[dict[str, object] | None, int | None]:
    """The keeper's answer to `start` and its process id as the kernel gives it (SCM_CREDENTIALS)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not select.select([conn], [], [], remaining)[0]:
        return None, None
    data, ancillary, _flags, _address = conn.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(struct.calcsize("iII")))
    if not data:
        return None, None
    pid = None
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(payload) >= struct.calcsize("iII"):
            pid = struct.unpack("iII", payload[: struct.calcsize("iII")])[0]
    return json.loads(data), pid if pid else None


def _read_output(launched: Launched) -> None:
    assert launched.process.stdout is not None
    for raw in launched.process.stdout:
        launched.output_tail.append(raw.decode(errors="replace").rstrip("\n"))
        del launched.output_tail[:-40]
