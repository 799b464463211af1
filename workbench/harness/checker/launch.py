"""Start the sandboxed solution process before the checker imports torch.

The checker's first act after reading the request and the solution's source is to start the solution
process (`launch`), so that the two interpreters' start and their imports of torch run at the same time
(about 1.5 s each on a small machine). Until the checker sends `init`, the process runs only the
harness's own code (`solution/host.py`): it imports torch and waits; it touches no device and has not
imported the solution. Imports only the standard library and torch-free harness modules.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workbench import paths
from workbench.harness.host import sandbox
from workbench.harness.host.child import die_with_parent

# Under the interpreter a kernel runs one program instance at a time in Python, each op on one small tile,
# where a BLAS or OpenMP thread pool costs more than it gives: one call of the naive Muon kernels on the
# 128x384 smoke workload took 1.94 s of wall and 3.8 s of CPU with 2 threads, 1.46 s and 1.46 s with one
# (2-core development machine; docs/harness.md, "The interpreter").
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
HOST_CODE = (
    "import sys; sys.path[:0] = {path!r}; from workbench.harness.solution.host import main; "
    "from workbench.harness.solution.fast_exit import exit_now; exit_now(main(sys.argv))"
)
SOLUTION_MODULES = ("workbench.harness.solution.host", "workbench.harness.solution.fast_exit")  # HOST_CODE's imports
# Without the sandbox the process gets fresh folders of its own for HOME, TMPDIR and the Triton cache,
# removed by close(); named like the evaluation's scratch with the checker's pid, so that the next
# evaluation's stale-scratch sweep (evaluate.remove_stale_scratch) removes them if the checker was killed
PRIVATE_PREFIX = "d2k-eval-{pid}-solution-"
PRIVATE_DIRS = {"HOME": "home", "TMPDIR": "tmp", "TRITON_CACHE_DIR": "triton-cache"}


@dataclass
class Launched:
    """A started solution process: the checker's end of the channel's socket, and what the sandbox did."""

    process: subprocess.Popen[bytes]
    sock: socket.socket
    info: sandbox.SandboxInfo
    device_in_process: str  # how the process names its device ("cuda:0" on a GPU: it sees only its own)
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
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = sandbox.worker_env(device)
    if device == "cpu":
        env |= ONE_THREAD  # the interpreter's numpy and torch ops on small tiles: threads only spin
    device_in_process = "cpu" if device == "cpu" else "cuda:0"  # a GPU process sees its one GPU only
    # The allow-list (sandbox.isolate): the interpreter, only the package's solution-side modules and
    # the solution file; the import path names only what is bound (HOST_CODE is on the command line).
    interpreter = sandbox.interpreter_paths(env)
    search_path = sandbox.import_path(interpreter)
    solution = Path(solution).resolve()
    argv = [sys.executable, "-I", "-c", HOST_CODE.format(path=search_path), str(theirs.fileno())]
    readable = [*interpreter, *sandbox.module_files(SOLUTION_MODULES), solution]
    hidden_paths = [*sandbox.default_hidden([*hidden, paths.DEFAULTS["tasks"]]), solution.parent]
    started = sandbox.isolate(argv, device=device, env=env, readable=readable, hidden=hidden_paths)
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
    launched = Launched(process, ours, started.info, device_in_process, private_dir)
    threading.Thread(target=_read_output, args=(launched,), daemon=True).start()
    return launched


def _read_output(launched: Launched) -> None:
    assert launched.process.stdout is not None
    for raw in launched.process.stdout:
        launched.output_tail.append(raw.decode(errors="replace").rstrip("\n"))
        del launched.output_tail[:-40]
