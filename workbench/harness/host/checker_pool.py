"""Checker processes from a warm zygote (checker/zygote.py) instead of a fresh interpreter each.

A host that evaluates many times (a session's runner, `bench eval --revisions`, the test suite) keeps one
`CheckerPool`; `evaluate(..., pool=pool)` then gets its checker forked by the pool's zygote for the
checker's environment, which has imported torch once. The checker is the same code with the same
request, limits and pipes; only its interpreter's start is skipped (about 1.5 s of CPU per evaluation on
a small machine). The pool also keeps the solution processes' warm start (`solutions`,
host/solution_pool.py): a zygote inside the solution's own sandbox that forks each evaluation's solution
process into namespaces of its own; the checker is handed a connection to it.

A zygote is started on first use per environment (the environment decides what the checker sees, so a
changed one gets its own), and ends when the pool is closed, when the host exits (its socket closes) or when
the thread that started it ends (the parent-death signal). A
zygote that cannot be started or has died is replaced once; `PoolUnavailable` tells the caller to start
the checker the plain way. Imports only the standard library and torch-free harness modules.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from typing import IO, Any

from workbench.harness.host.child import die_with_parent
from workbench.harness.host.solution_pool import SolutionZygotes

ZYGOTE_START_S = 60.0  # the first request waits for the zygote's imports
ZygoteKey = tuple[tuple[str, str], ...]


class PoolUnavailable(RuntimeError):
    """The pool could not fork a checker (no zygote could start, or it died): start one the plain way."""


class PooledChecker:
    """A checker forked by a zygote: the part of `subprocess.Popen` that `evaluate` uses (pid, stdin, stdout,
    wait, poll, returncode). Its exit status comes from the zygote, which is its parent."""

    def __init__(self, pid: int, stdin: IO[str], stdout: IO[str]) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None
        self._ended = threading.Event()

    def set_exit(self, returncode: int) -> None:
        self.returncode = returncode
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"checker {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode


class _Zygote:
    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "workbench.harness.checker.zygote", str(theirs.fileno())],
                env=env,
                cwd="/",  # `-m` puts the working directory first on sys.path: never the host's folder
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                start_new_session=True,
                # it dies with the thread that started it (a killed host takes it at once, even mid-import;
                # a pool whose starting thread ended gets a new zygote on its next start)
                preexec_fn=die_with_parent,
            )
        finally:
            theirs.close()
        self.sock = ours
        self.request_lock = threading.Lock()  # one request at a time: its answer is the next pid
        self.children_lock = threading.Lock()
        self.pids: queue.Queue[int | None] = queue.Queue()
        self.children: dict[int, PooledChecker] = {}
        self.early_exits: dict[int, int] = {}  # an exit read before its child was registered
        self.alive = True
        threading.Thread(target=self._read, name="checker-zygote", daemon=True).start()

    def _read(self) -> None:
        """The zygote's answers: pids to the waiting request, exits to their checkers."""
        try:
            while message := self.sock.recv(4096):
                data: dict[str, Any] = json.loads(message)
                if "pid" in data:
                    self.pids.put(int(data["pid"]))
                    continue
                pid, returncode = int(data["exit"]), int(data["returncode"])
                with self.children_lock:
                    child = self.children.pop(pid, None)
                    if child is None:
                        self.early_exits[pid] = returncode
                if child is not None:
                    child.set_exit(returncode)
        except (OSError, ValueError):
            pass
        self.alive = False
        self.pids.put(None)
        with self.children_lock:
            orphans, self.children = list(self.children.values()), {}
        for child in orphans:  # the zygote ended: its children were killed with it (parent-death signal)
            child.set_exit(-signal.SIGKILL)

    def fork(self, cwd: str, rlimit_as: int | None, result_fd: int, warm_fd: int | None) -> PooledChecker:
        stdin_read, stdin_write = os.pipe()
        output_read, output_write = os.pipe()
        handed_over = False
        try:
            with self.request_lock:
                if not self.alive:
                    raise PoolUnavailable("the checker zygote has ended")
                request = json.dumps({"cwd": cwd, "rlimit_as": rlimit_as}).encode()
                try:
                    extra = [] if warm_fd is None else [warm_fd]
                    socket.send_fds(self.sock, [request], [stdin_read, output_write, result_fd, *extra])
                    pid = self.pids.get(timeout=ZYGOTE_START_S)
                except (OSError, queue.Empty) as exc:
                    self.alive = False  # a late answer must not be taken for the next request's
                    raise PoolUnavailable(f"the checker zygote did not answer: {exc!r}") from None
                if pid is None:
                    raise PoolUnavailable("the checker zygote has ended")
                child = PooledChecker(
                    pid,
                    open(stdin_write, "w", encoding="utf-8"),  # noqa: SIM115 (owned by the checker object)
                    open(output_read, encoding="utf-8", errors="replace"),  # noqa: SIM115
                )
                handed_over = True
                with self.children_lock:
                    early = self.early_exits.pop(pid, None)
                    if early is None:
                        self.children[pid] = child
                if early is not None:
                    child.set_exit(early)
                return child
        finally:
            os.close(stdin_read)
            os.close(output_write)
            if not handed_over:
                os.close(stdin_write)
                os.close(output_read)

    def close(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


class CheckerPool:
    """Zygotes by checker environment; `start` forks a checker. Close it (or use it as a context manager)
    to end them; they also end when this process exits."""

    def __init__(self) -> None:
        self.solutions = SolutionZygotes()  # the solution processes' warm start (host/solution_pool.py)
        self._zygotes: dict[ZygoteKey, _Zygote] = {}
        self._unusable: set[ZygoteKey] = set()
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> CheckerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(
        self, env: dict[str, str], cwd: str, result_fd: int, rlimit_as: int | None, warm_fd: int | None = None
    ) -> PooledChecker:
        """Fork a checker with this environment in `cwd`, its result pipe `result_fd` and, where given, its
        connection to a solution zygote `warm_fd` (the caller closes its copies). PoolUnavailable when no
        zygote can do it."""
        key: ZygoteKey = tuple(sorted(env.items()))
        if key in self._unusable:
            raise PoolUnavailable("no zygote could serve this environment")
        for _attempt in range(2):  # a zygote that died (killed with a test's processes, say) is replaced once
            zygote = self._zygote(key, env)
            try:
                return zygote.fork(cwd, rlimit_as, result_fd, warm_fd)
            except PoolUnavailable:
                with self._lock:
                    if self._zygotes.get(key) is zygote:
                        del self._zygotes[key]
                zygote.close()
        self._unusable.add(key)  # two zygotes in a row failed: the plain start from now on, without a third try
        raise PoolUnavailable("the checker zygote could not fork a checker")

    def _zygote(self, key: ZygoteKey, env: dict[str, str]) -> _Zygote:
        with self._lock:
            if self._closed:
                raise PoolUnavailable("the checker pool is closed")
            zygote = self._zygotes.get(key)
            if zygote is None:
                try:
                    zygote = _Zygote(env)
                except OSError as exc:
                    raise PoolUnavailable(f"the checker zygote cannot start: {exc}") from None
                self._zygotes[key] = zygote
            return zygote

    def zygote_pids(self) -> list[int]:
        """The process ids of this pool's zygotes now (one per checker environment used)."""
        with self._lock:
            return [z.process.pid for z in self._zygotes.values()]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            zygotes, self._zygotes = list(self._zygotes.values()), {}
        for zygote in zygotes:
            zygote.close()
        self.solutions.close()


__all__ = ["CheckerPool", "PoolUnavailable", "PooledChecker"]
