"""Start the import probe (`workbench.harness.probe.worker`) in the allow-list sandbox and talk to it (no torch).

The probe runs a peer problem's own code, which comes from outside the project, so it is confined as a
solution is (`sandbox.isolate`): an empty read-only root with the system folders, the interpreter and the
probe's own modules only (not the repository, not the peer's checkout: the problem's text arrives on stdin),
no network, its own namespaces, and death with its parent. One process serves a whole import: it imports
torch once and forks a child per problem (`worker.run_one`), so one problem's code never runs beside
another's. Every line it writes is validated (`ProbeResult`); a process that dies or writes garbage fails
the problem it was on, and the next problem gets a fresh process.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from workbench import paths
from workbench.harness.host import sandbox
from workbench.harness.host.child import die_with_parent
from workbench.harness.protocol.probe import ProbeRequest, ProbeResult

WORKER_MODULE = "workbench.harness.probe.worker"
WORKER_CODE = "import sys; sys.path[:0] = {path!r}; from workbench.harness.probe.worker import main; sys.exit(main())"
START_GRACE_S = 60.0  # the worker's start (interpreter, torch) on top of a problem's own time


def runtime_files() -> list[Path]:
    """The files the importer copies into every imported task: the source rewrites, then the runtime."""
    return [
        paths.IMPORT_ROOT / "workbench" / "harness" / "protocol" / "peer_source.py",
        paths.IMPORT_ROOT / "workbench" / "harness" / "probe" / "peer_runtime.py",
    ]


class ProbeProcess:
    """The sandboxed probe worker: `probe(request)` for each problem; `close()` at the end (or `with`)."""

    def __init__(self, hidden: list[Path] | None = None) -> None:
        self.hidden = hidden or []
        self.process: subprocess.Popen[bytes] | None = None
        self.sandbox_line = ""

    def __enter__(self) -> ProbeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        env = sandbox.worker_env("cpu")
        interpreter = sandbox.interpreter_paths(env)
        argv = [sys.executable, "-I", "-c", WORKER_CODE.format(path=sandbox.import_path(interpreter))]
        readable = [*interpreter, *sandbox.module_files([WORKER_MODULE])]
        hidden = [*sandbox.default_hidden([*self.hidden, paths.DEFAULTS["tasks"]])]
        launch = sandbox.isolate(argv, device="cpu", env=env, readable=readable, hidden=hidden)
        self.sandbox_line = f"{launch.info.kind}: {launch.info.detail}"
        return start_piped_worker(launch)

    def probe(self, request: ProbeRequest) -> ProbeResult:
        """The worker's answer for one problem, or a failed result when it does not answer in time or sensibly."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        started = time.perf_counter()
        try:
            process.stdin.write(request.model_dump_json().encode() + b"\n")
            process.stdin.flush()
        except OSError:
            self.close()
            return ProbeResult(ok=False, skip="crashed", detail="the probe process ended before the request")
        line = self._read_line(process, request.timeout_s + START_GRACE_S)
        if line is None:
            self.close()
            return ProbeResult(
                ok=False, skip="timeout", detail="the probe process did not answer in time", seconds=time.perf_counter() - started
            )
        try:
            return ProbeResult.model_validate_json(line)
        except ValidationError as exc:
            self.close()
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            return ProbeResult(ok=False, skip="crashed", detail=f"the probe's answer does not validate: {where}: {first['msg']}")

    @staticmethod
    def _read_line(process: subprocess.Popen[bytes], timeout_s: float) -> bytes | None:
        assert process.stdout is not None
        deadline = time.monotonic() + timeout_s
        buffer = b""
        fd = process.stdout.fileno()
        while not buffer.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            buffer += chunk
        return buffer

    def close(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            if self.process.stdin is not None:
                with contextlib.suppress(OSError):
                    self.process.stdin.close()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def start_piped_worker(launch: sandbox.Launch) -> subprocess.Popen[bytes]:
    """A sandboxed CPU worker that answers on stdout what it reads on stdin (stderr dropped), dying with its parent."""
    try:
        return subprocess.Popen(
            launch.command,
            executable=launch.executable,
            pass_fds=list(launch.pass_fds),
            env=launch.env,
            cwd="/",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
    finally:
        launch.close()
