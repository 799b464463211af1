"""A warm start for checker processes: `python -m workbench.harness.checker.zygote CONTROL_FD`.

Started by a host's `CheckerPool` (host/checker_pool.py) with the checker's environment, it imports torch
and the checker's modules once, then forks one checker per request: the child becomes exactly what
`python -m workbench.harness.checker.entry RESULT_FD` would be (its own session, the CPU memory limit,
the request's folder as its working directory, stdin, stdout and the result pipe from the request), with
torch already imported, so an evaluation's checker starts in milliseconds instead of the 1.5-2 s of an
interpreter importing torch.

Why this keeps each evaluation fresh: the zygote runs no evaluation code and holds no secret (the request
with the secret reaches only the child, through its stdin); a child starts from the zygote's state right
after the imports, never from another evaluation's, and it reseeds every global random generator before
it runs (the harness draws its secrets and check samples from the operating system, not from these, but
a fork would otherwise share them). The solution process is not forked from here: the checker starts it
sandboxed, from a fresh interpreter or through the solution zygote the host passed it (which runs inside
the solution's sandbox, solution/zygote.py), never from this process. The zygote never touches a
device, so CUDA is initialised in each child only.

Protocol (a SOCK_SEQPACKET socket, one JSON message per packet): the host sends {"cwd", "rlimit_as"} with
three descriptors (the child's stdin, its stdout and stderr, the result pipe), and a fourth where the host
passes the checker a connection to a warm solution zygote (host/solution_pool.py); the zygote answers {"pid"}
once forked and {"exit": pid, "returncode": rc} when that child ends. When the host's end closes (the host
exited or closed the pool), the zygote kills its children's process groups and exits.
"""

from __future__ import annotations

import json
import os
import random
import resource
import selectors
import signal
import socket
import sys
import traceback
from typing import Any

from workbench.harness.host.child import die_with_parent
from workbench.harness.solution.fast_exit import exit_now

MAX_MESSAGE = 65536


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[1]))
    import torch  # noqa: PLC0415 (the warm part: what every checker would import)

    from workbench.harness.checker import entry, process  # noqa: F401, PLC0415 (the checker's own modules)

    if torch.cuda.is_initialized():
        return 3  # a forked child could not use the device: the pool falls back to the plain start

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup descriptor is written
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    children: set[int] = set()
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is control:
                    message, fds, _flags, _address = socket.recv_fds(control, MAX_MESSAGE, 4)
                    if not message:
                        return 0  # the host is gone or closed the pool
                    request = json.loads(message)
                    pid = os.fork()
                    if pid == 0:
                        _child(request, fds, [control.fileno(), wake_read, wake_write])
                    for fd in fds:
                        os.close(fd)
                    children.add(pid)
                    control.send(json.dumps({"pid": pid}).encode())
                else:
                    os.read(wake_read, 4096)
            _reap(children, control)
    except (BrokenPipeError, ConnectionResetError):
        return 0
    finally:
        for pid in children:
            _kill_group(pid)
        exit_now(0)  # no interpreter teardown (torch's takes a while): the host may be waiting for us to end


def _reap(children: set[int], control: socket.socket) -> None:
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        children.discard(pid)
        control.send(json.dumps({"exit": pid, "returncode": os.waitstatus_to_exitcode(status)}).encode())


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):  # its group (it and the solution process), else it alone
        try:
            kill(pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            continue


def _child(request: dict[str, Any], fds: list[int], zygote_fds: list[int]) -> None:
    """Become the checker of one evaluation; never returns."""
    code = 70
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in zygote_fds:
            os.close(fd)
        die_with_parent()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if request.get("rlimit_as") is not None:
            limit = int(request["rlimit_as"])
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        stdin_fd, output_fd, result_fd, *warm = fds  # warm: a connection to a solution zygote, where the host has one
        os.dup2(stdin_fd, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(stdin_fd)
        os.close(output_fd)
        os.chdir(request["cwd"])
        _reseed()
        from workbench.harness.checker import entry  # noqa: PLC0415 (imported by the zygote already)

        code = entry.main(["entry", str(result_fd), *(str(fd) for fd in warm[:1])])
    except BaseException:
        traceback.print_exc()
    finally:
        exit_now(code)


def _reseed() -> None:
    """Give the child's global random generators fresh seeds from the operating system."""
    random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(int.from_bytes(os.urandom(4), "little"))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
