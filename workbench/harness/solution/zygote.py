"""A warm start for solution processes: the zygote, run inside the allow-list sandbox by the host's pool.

Started by host/solution_pool.py in the same sandbox a plain solution process gets (sandbox.isolate, less
the solution file), with one addition: CAP_SYS_ADMIN and CAP_SETPCAP inside the user namespace every
sandboxed process has (`sandbox.ADMIN_ARGS`). It imports torch and the solution host's modules once, makes itself non-dumpable
(nothing it starts can trace it or read its memory), and then serves connections, each one evaluation's:

    zygote (Z) --fork--> keeper (K, one per evaluation) --fork, new pid namespace--> init (I, pid 1)
        --fork--> solution host (S, pid 2)

K takes new mount, ipc, network and uts namespaces, and a new pid namespace for I; I mounts its own /proc,
a fresh empty /dev (device nodes and bwrap's symlinks kept, a new /dev/pts), /tmp and /dev/shm, makes
every other writable mount read-only (the rule: every writable mount the solution process sees is made
for this evaluation, or read-only; checked from the mount table: confine.fresh_mounts), copies the
solution from the descriptor the checker sent into a tmpfs of its own and remounts that read-only, drops
every capability (bounding and ambient sets included; no_new_privs), verifies that from /proc/self/status,
closes every descriptor but the channel and the output, and only then forks S, the solution host
(solution/host.py) on the channel from the checker. I reaps until S ends and tells K its status (pid 2
under an init, as a plain bwrap runs it: pid 1 would ignore the signals a process sends itself).

Why this keeps each evaluation fresh, as a fresh bwrap would: I and S start from Z's image right after
the imports, never from another evaluation's process (Z holds no evaluation's data: it only ever receives a
connection's descriptor); what S can write (files, FIFOs and sockets in any writable mount, System V and
POSIX IPC objects, abstract sockets) lives in mounts and namespaces made for this evaluation alone and is
gone with them; S cannot see, signal or trace Z, K or another evaluation's process (its own pid namespace;
Z non-dumpable); when I, pid 1 of the namespace, ends, the kernel ends every process S started. K kills I
(and with it the namespace) when the checker's end of the connection closes (the checker ended or was
killed) or asks it to, and reports S's exit status on the connection; neither I nor S holds the
connection, so nothing S sends can pass for K's report.

Protocol on an evaluation's connection (SOCK_SEQPACKET, one JSON message a packet): the checker sends
{"op": "start", "limits": {...}} with three descriptors (S's end of the channel, the write end of its
output pipe, the solution file opened read-only); K answers {"started": true, "solution": PATH} (PATH:
where S sees its copy) or {"started": false, "error": ...}, later {"exit": RETURNCODE}; {"op": "kill"}
from the checker ends S. The checker reads K's process id from the kernel's credentials on the answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import select
import signal
import socket
import sys
import traceback
from pathlib import Path
from typing import Any

from workbench.harness.protocol.limits import RESOURCE_LIMITS
from workbench.harness.solution import confine
from workbench.harness.solution.fast_exit import exit_now

MAX_MESSAGE = 65536
SOLUTION_DIR = "/tmp/.d2k-solution"  # a tmpfs of its own, read-only once the solution is copied in
MAX_SOLUTION_BYTES = 8 * 2**20
NAMESPACES = confine.CLONE_NEWNS | confine.CLONE_NEWIPC | confine.CLONE_NEWNET | confine.CLONE_NEWUTS | confine.CLONE_NEWPID


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[1]))
    import torch  # noqa: PLC0415 (the warm part: what every solution process would import)

    from workbench.harness.solution import host  # noqa: F401, PLC0415 (the solution host's own modules)

    if torch.cuda.is_initialized():
        return 3  # a forked process could not use the device
    confine.set_dumpable(False)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel; each reports its own end
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(control, MAX_MESSAGE, 1)
        except OSError:
            return 0
        if not message:
            return 0  # the host closed the pool: bwrap ends with us, and the kernel ends our namespace
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            continue
        if os.fork() == 0:
            _keeper(fds[0], control.fileno())
        os.close(fds[0])


def _keeper(conn_fd: int, control_fd: int) -> None:
    """K: one evaluation's solution process, started on the checker's request and watched; never returns."""
    code = 0
    pid = 0
    try:
        os.close(control_fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        conn = socket.socket(fileno=conn_fd)
        message, fds, _flags, _address = socket.recv_fds(conn, MAX_MESSAGE, 3)
        if not message or len(fds) != 3:
            return
        request = json.loads(message)
        if request.get("op") != "start":
            return
        confine.unshare(NAMESPACES)
        ready_read, ready_write = os.pipe()
        status_read, status_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_read)
            os.close(status_read)
            _namespace_init(request, fds, ready_write, status_write, conn_fd)
        os.close(ready_write)
        os.close(status_write)
        for fd in fds:
            os.close(fd)
        with os.fdopen(ready_read, "rb") as ready:
            said = ready.read()
        if said == b"ok":
            conn.send(json.dumps({"started": True, "solution": _solution_path(request)}).encode())
        else:
            conn.send(json.dumps({"started": False, "error": said.decode(errors="replace")[-500:] or "exited"}).encode())
        init_code = _watch(conn, pid)
        pid = 0  # reaped
        with os.fdopen(status_read, "rb") as status:
            told = status.read(32)
        returncode = int(told) if told.strip().lstrip(b"-").isdigit() else init_code
        conn.send(json.dumps({"exit": returncode}).encode())
    except BaseException:
        traceback.print_exc()
        code = 70
    finally:
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        exit_now(code)


def _solution_path(request: dict[str, Any]) -> str:
    name = Path(str(request.get("name") or "solution.py")).name
    return f"{SOLUTION_DIR}/{name if name.endswith('.py') else 'solution.py'}"


def _watch(conn: socket.socket, pid: int) -> int:
    """Wait for I to end, killing it (and its namespace) when the checker asks or closes its end; its code."""
    pidfd = os.pidfd_open(pid)
    killed = False
    while True:
        ready, _, _ = select.select([pidfd, conn.fileno()], [], [])
        if pidfd in ready:
            _, status = os.waitpid(pid, 0)
            os.close(pidfd)
            return os.waitstatus_to_exitcode(status)
        if not killed:
            try:
                data = conn.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data or json.loads(data).get("op") == "kill":
                os.kill(pid, signal.SIGKILL)  # pid 1 of its namespace: the kernel ends everything it started
                killed = True


def _namespace_init(request: dict[str, Any], fds: list[int], ready_write: int, status_write: int, conn_fd: int) -> None:
    """I, pid 1 of the new pid namespace: confines itself, then forks the solution host (pid 2, as under a
    plain bwrap, whose own init is pid 1) and reaps until it ends; tells K the host's exit status. Never
    returns. Until `ok` is written, a failure is reported to K (and the checker starts the solution the
    plain way)."""
    code = 70
    channel_fd, output_fd, solution_fd = fds
    try:
        os.close(conn_fd)
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL, "prctl(PR_SET_PDEATHSIG)")
        source = os.read(solution_fd, MAX_SOLUTION_BYTES + 1)
        os.close(solution_fd)
        if len(source) > MAX_SOLUTION_BYTES:
            raise ValueError(f"the solution is larger than {MAX_SOLUTION_BYTES} bytes")
        confine.fresh_mounts(SOLUTION_DIR)
        path = _solution_path(request)
        with open(path, "xb") as out:
            out.write(source)
        confine.seal(SOLUTION_DIR)
        _set_limits(request.get("limits") or {})
        confine.drop_capabilities()
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        keep = sorted({0, 1, 2, channel_fd, ready_write, status_write})
        for low, high in zip(keep, [*keep[1:], 65536], strict=True):
            os.closerange(low + 1, high)  # everything else Z inherited (its control socket is closed in K)
        os.chdir("/tmp")
        host_pid = os.fork()
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(ready_write, f"{type(exc).__name__}: {exc}".encode())
        exit_now(code)
    if host_pid == 0:
        os.close(status_write)
        _solution_host(channel_fd, ready_write)
    os.close(channel_fd)
    os.close(ready_write)
    while True:  # reap every orphan of the namespace until the host ends
        try:
            ended, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if ended == host_pid:
            with contextlib.suppress(OSError):
                os.write(status_write, str(os.waitstatus_to_exitcode(status)).encode())
            break
    exit_now(0)  # pid 1 ends: the kernel ends whatever the solution left in the namespace


def _solution_host(channel_fd: int, ready_write: int) -> None:
    """H, pid 2: the solution host on the checker's channel; never returns."""
    code = 70
    try:
        random.seed()  # a fresh interpreter seeds from the OS; a fork would share Z's state
        os.write(ready_write, b"ok")
        os.close(ready_write)
        from workbench.harness.solution import host  # noqa: PLC0415 (imported by Z already)

        code = host.main(["host", str(channel_fd)])
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        exit_now(code)


def _set_limits(limits: dict[str, Any]) -> None:
    """The checker's own resource limits (what a plain start inherits from it), never above Z's hard ones."""
    for name, value in limits.items():
        which = RESOURCE_LIMITS.get(name)
        if which is None:
            raise ValueError(f"unknown limit {name!r}")
        soft, hard = (int(v) for v in value)
        _, z_hard = resource.getrlimit(which)

        def lower(a: int, b: int) -> int:
            if a == resource.RLIM_INFINITY:
                return b
            if b == resource.RLIM_INFINITY:
                return a
            return min(a, b)

        new_hard = lower(hard, z_hard)
        resource.setrlimit(which, (lower(soft, new_hard), new_hard))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
