"""What a sandboxed solution process is started with, computed the same way by the checker (which starts it)
and by the host's warm pool (host/solution_pool.py, which keeps a zygote for it): its environment, its
import path, the interpreter's folders it may read, the paths masked, and a digest of the sandbox they make.

The warm start is used only where the zygote's sandbox is the one this evaluation would get: the checker
computes `warm_digest()` for its own evaluation and compares it with the digest the host started the
zygote for (EvalRequest.warm_solution); any difference (a path masked for this evaluation only, another
environment, another device) and it starts the solution the plain way. Imports only the standard library
and torch-free harness modules.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench import paths
from workbench.harness.host import sandbox

# Under the interpreter a kernel runs one program instance at a time in Python, each op on one small tile,
# where a BLAS or OpenMP thread pool costs more than it gives: one call of the naive Muon kernels on the
# 128x384 smoke workload took 1.94 s of wall and 3.8 s of CPU with 2 threads, 1.46 s and 1.46 s with one
# (2-core development machine; docs/harness.md, "The interpreter").
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
HOST_CODE = (
    "import sys; sys.path[:0] = {path!r}; from workbench.harness.solution.host import main; "
    "from workbench.harness.solution.fast_exit import exit_now; exit_now(main(sys.argv))"
)
ZYGOTE_CODE = (
    "import sys; sys.path[:0] = {path!r}; from workbench.harness.solution.zygote import main; "
    "from workbench.harness.solution.fast_exit import exit_now; exit_now(main(sys.argv))"
)
SOLUTION_MODULES = ("workbench.harness.solution.host", "workbench.harness.solution.fast_exit")  # HOST_CODE's imports
ZYGOTE_MODULES = ("workbench.harness.solution.zygote", *SOLUTION_MODULES)  # ZYGOTE_CODE's imports


@dataclass(frozen=True)
class SolutionPlan:
    """The sandbox of one evaluation's solution process, less the solution file itself."""

    device: str
    env: dict[str, str]
    interpreter: tuple[Path, ...]  # read-only: the interpreter's prefixes, site-packages and libraries
    search_path: tuple[str, ...]  # the import path, naming only what is bound
    hidden: tuple[Path, ...]  # masked where they lie inside a bound folder

    @property
    def device_in_process(self) -> str:
        """How the process names its device ("cuda:0" on a GPU: it sees only its own)."""
        return "cpu" if self.device == "cpu" else "cuda:0"

    def host_argv(self, executable: str, channel_fd: int) -> list[str]:
        return [executable, "-I", "-c", HOST_CODE.format(path=list(self.search_path)), str(channel_fd)]

    def zygote_argv(self, executable: str, control_fd: int) -> list[str]:
        return [executable, "-I", "-c", ZYGOTE_CODE.format(path=list(self.search_path)), str(control_fd)]

    def plain_readable(self, solution: Path) -> list[Path]:
        """What the plain start binds: the interpreter, the solution-side modules file by file, the solution."""
        return [*self.interpreter, *sandbox.module_files(SOLUTION_MODULES), solution]

    def zygote_readable(self) -> list[Path]:
        """What the zygote's sandbox binds: no solution (each evaluation's copy reaches its process only)."""
        return [*self.interpreter, *sandbox.module_files(ZYGOTE_MODULES)]

    def warm_digest(self) -> str:
        """sha256 of the zygote's sandbox for this plan: its bwrap arguments and its import path."""
        args = sandbox.isolate_args(device=self.device, env=self.env, readable=self.zygote_readable(), hidden=self.hidden)
        text = json.dumps([args, list(self.search_path)], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def plan(solution: Path, device: str, hidden: Sequence[Path]) -> SolutionPlan:
    """The plan for `solution` on `device` ("cpu", "cuda" or "cuda:N"), with `hidden` masked as well as
    the task, guidance and sessions roots, the home folders and the solution's own folder."""
    env = sandbox.worker_env(device)
    if device == "cpu":
        env |= ONE_THREAD  # the interpreter's numpy and torch ops on small tiles: threads only spin
    # The allow-list (sandbox.isolate): the interpreter, only the package's solution-side modules and
    # the solution; the import path names only what is bound (the code is on the command line).
    interpreter = sandbox.interpreter_paths(env)
    hidden_paths = [*sandbox.default_hidden([*hidden, paths.DEFAULTS["tasks"]]), Path(solution).resolve().parent]
    return SolutionPlan(
        device=device,
        env=env,
        interpreter=tuple(interpreter),
        search_path=tuple(sandbox.import_path(interpreter)),
        hidden=tuple(hidden_paths),
    )
