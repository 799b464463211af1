"""Warm solution zygotes (solution/zygote.py), one per sandbox, kept by a host that evaluates many times.

`SolutionZygotes.connect(solution, device, hidden)` returns a connection to the zygote for the sandbox that
evaluation's solution process gets (host/solution_plan.py), starting the zygote on first use, and the
digest of that sandbox; the host hands both to the checker (its second argument and
EvalRequest.warm_solution), which recomputes the digest itself and starts the solution through the zygote
only where the two agree (checker/launch.py `launch_warm`). Each connection serves one evaluation: the
zygote forks a keeper for it at once, which waits for the checker's request and ends with the connection.

What it saves: the solution process's interpreter start and its import of torch (2.5-3 s of CPU on a
2-core machine, docs/harness.md), per evaluation. What it does not change: the sandbox (the same bwrap
arguments), the process's environment, limits and channel, and what it can reach (each evaluation gets
namespaces and a /tmp of its own; solution/zygote.py says how). A zygote that cannot start (no bwrap, a
bwrap that refuses a user namespace with CAP_SYS_ADMIN inside it, $D2K_SANDBOX off) or dies twice makes
`connect` return None for its sandbox from then on: the checker starts solutions the plain way.

Imports only the standard library and torch-free harness modules.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from workbench.harness.host import sandbox, solution_plan
from workbench.harness.host.child import die_with_parent


class _Zygote:
    def __init__(self, plan: solution_plan.SolutionPlan) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            argv = plan.zygote_argv(sys.executable, theirs.fileno())
            started = sandbox.isolate(
                argv, device=plan.device, env=dict(plan.env), readable=plan.zygote_readable(), hidden=plan.hidden, admin=True
            )
            try:
                if started.info.kind != "bubblewrap":
                    raise OSError(f"no sandbox: {started.info.detail}")
                self.process = subprocess.Popen(
                    started.command,
                    executable=started.executable,
                    pass_fds=[theirs.fileno(), *started.pass_fds],
                    env=started.env,
                    cwd="/",
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    preexec_fn=die_with_parent,  # it dies with the thread that started it
                )
            finally:
                started.close()
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self.lock = threading.Lock()

    def connect(self) -> socket.socket:
        """A new connection, its other end handed to the zygote (which forks a keeper for it)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with self.lock:
                if self.process.poll() is not None:
                    raise OSError("the solution zygote has ended")
                socket.send_fds(self.sock, [b"connect"], [theirs.fileno()])
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return ours

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


class SolutionZygotes:
    """Zygotes by sandbox digest. Close it to end them; they also end when this process exits.

    Zygotes are started by one thread of the pool's own, which lives as long as the pool: a zygote (and its
    bwrap) dies with the thread that started it (the parent-death signal), and an evaluation's thread may
    be short-lived (the TUI's workers). A zygote that served and then died is replaced; one that fails
    as soon as it is started makes the pool give that sandbox up after the second time."""

    def __init__(self) -> None:
        self._zygotes: dict[str, _Zygote] = {}
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._starter: concurrent.futures.ThreadPoolExecutor | None = None

    def connect(self, solution: Path, device: str, hidden: Sequence[Path]) -> tuple[socket.socket, str] | None:
        """A connection to the zygote for this evaluation's sandbox and that sandbox's digest, or None."""
        if sandbox.status(device).kind != "bubblewrap":
            return None  # no sandbox here now ($D2K_SANDBOX off, no bwrap): not the zygote's failure
        plan = solution_plan.plan(Path(solution).resolve(), device, hidden)
        digest = plan.warm_digest()
        with self._lock:
            if self._closed or self._failures.get(digest, 0) >= 2:
                return None
            old = self._zygotes.pop(digest, None)
            if old is not None:
                with contextlib.suppress(OSError):
                    connection = old.connect()
                    self._zygotes[digest] = old
                    return connection, digest
                old.close()  # it served before and has ended since (killed, its starting thread gone): replace it
            try:
                zygote = self._start(plan)
                self._zygotes[digest] = zygote
                return zygote.connect(), digest
            except OSError:
                self._failures[digest] = self._failures.get(digest, 0) + 1  # a new zygote failed at once
                broken = self._zygotes.pop(digest, None)
        if broken is not None:
            broken.close()
        return None

    def _start(self, plan: solution_plan.SolutionPlan) -> _Zygote:
        """A new zygote, started by the pool's own thread (see the class's note)."""
        if self._starter is None:
            self._starter = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="solution-zygotes")
        return self._starter.submit(_Zygote, plan).result()

    def zygote_pids(self) -> list[int]:
        """The process ids of the zygotes' bwrap processes now (one per sandbox used)."""
        with self._lock:
            return [z.process.pid for z in self._zygotes.values()]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            zygotes, self._zygotes = list(self._zygotes.values()), {}
        for zygote in zygotes:
            zygote.close()
        if self._starter is not None:
            self._starter.shutdown(wait=False)


__all__ = ["SolutionZygotes"]
