"""The profile tool's back end: the agent's solution profiled in a sandboxed process (GPU sessions only).

The solution is the agent's code, so it runs like the harness's solution process: a fresh interpreter
started through `workbench.harness.sandbox.wrap` (no network, a clean environment, the home folder, the
tasks, the guidance and the sessions invisible), with only a scratch folder readable that holds copies of
the solution and the task's inputs.py. The device lock of the sessions root is held meanwhile, so a
profile never overlaps an evaluation on the same device. The process (`profile_host.py`) prints one JSON
line; this module turns it into the tool's text.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from workbench import paths
from workbench.agent.tools import Stopped, ToolError
from workbench.catalog import Task
from workbench.harness.remote import die_with_parent

HOST_CODE = "import sys; sys.path[:0] = {path!r}; from workbench.agent.profile_host import main; sys.exit(main(sys.argv))"
PASSED_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH")
PREFIX = "D2K_PROFILE "


class Profiler(Protocol):
    def profile(self, task: Task, solution: Path, workload: str, stop: threading.Event) -> str:
        """The profile's text; ToolError when it cannot be made, Stopped when the session is stopped."""
        ...


class SandboxedProfiler:
    """torch.profiler and Triton's compiled metadata, from a sandboxed run of the solution on `device`."""

    def __init__(self, device: str, sessions_root: Path, timeout_s: float = 300.0, warmup: int = 3, calls: int = 10) -> None:
        self.device = device
        self.sessions_root = sessions_root
        self.timeout_s = timeout_s
        self.warmup = warmup
        self.calls = calls

    def _environment(self) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "TRITON_CACHE_DIR": "/tmp/triton-cache",
            "TMPDIR": "/tmp",
        }
        env.update({name: os.environ[name] for name in PASSED_ENV if name in os.environ})
        index = int(self.device.partition(":")[2] or 0)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [v.strip() for v in visible.split(",")] if visible else [str(index)]
        env["CUDA_VISIBLE_DEVICES"] = ids[index] if visible and index < len(ids) else str(index)
        return env

    def command(self, task: Task, scratch: Path) -> tuple[list[str], dict[str, str], str]:
        """The sandboxed command line, the environment to start it with, and how it is confined."""
        from workbench.harness import sandbox
        from workbench.harness.evaluate import hidden_paths

        hidden = [Path(p) for p in hidden_paths(task, [self.sessions_root])]
        search_path = [
            p for p in sys.path if p and Path(p).is_dir() and not any(Path(p).resolve().is_relative_to(h) for h in hidden)
        ]
        if str(paths.IMPORT_ROOT) not in search_path:
            search_path.insert(0, str(paths.IMPORT_ROOT))
        argv = [sys.executable, "-I", "-c", HOST_CODE.format(path=search_path), str(scratch / "request.json")]
        env = self._environment()
        readable = [*sandbox.default_readable(), *(Path(p) for p in search_path), scratch]
        command, info = sandbox.wrap(argv, device=self.device, env=env, readable=readable, hidden=sandbox.default_hidden(hidden))
        if info.kind == "none":
            return command, {**env, "PATH": os.environ.get("PATH", env["PATH"])}, f"none ({info.detail})"
        return command, sandbox.launcher_env(), info.detail

    def profile(self, task: Task, solution: Path, workload: str, stop: threading.Event) -> str:
        from workbench.session.evaluation import device_lock
        from workbench.session.runner import LOCKS_DIR

        axes = task.workload(workload).axes
        with device_lock(self.sessions_root / LOCKS_DIR, self.device), tempfile.TemporaryDirectory(prefix="d2k-profile-") as tmp:
            scratch = Path(tmp)
            shutil.copyfile(solution, scratch / "solution.py")
            shutil.copyfile(task.file("inputs.py"), scratch / "inputs.py")
            request = {
                "solution": str(scratch / "solution.py"),
                "inputs": str(scratch / "inputs.py"),
                "axes": axes,
                "seed": 20261201,
                "order": [a.name for a in task.spec.signature.inputs],
                "warmup": self.warmup,
                "calls": self.calls,
            }
            (scratch / "request.json").write_text(json.dumps(request), encoding="utf-8")
            command, env, confinement = self.command(task, scratch)
            output = self._run(command, env, stop)
        payload = next(
            (json.loads(line[len(PREFIX) :]) for line in reversed(output.splitlines()) if line.startswith(PREFIX)), None
        )
        if payload is None:
            tail = "\n".join(output.strip().splitlines()[-30:])
            raise ToolError(f"the profile run ended without a result; its output:\n{tail}")
        if "error" in payload:
            raise ToolError(f"the solution failed while being profiled: {payload['error']}")
        return format_profile(payload, confinement)

    def _run(self, command: list[str], env: dict[str, str], stop: threading.Event) -> str:
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as out:
            process = subprocess.Popen(
                command,
                env=env,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
            deadline = time.monotonic() + self.timeout_s
            try:
                while True:
                    try:
                        process.wait(timeout=0.5)
                        break
                    except subprocess.TimeoutExpired:
                        if stop.is_set():
                            raise Stopped from None
                        if time.monotonic() > deadline:
                            raise ToolError(f"the profile run did not finish within {self.timeout_s:g} s") from None
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            out.seek(0)
            return out.read()


def format_profile(payload: dict[str, Any], confinement: str) -> str:
    """The tool's text: kernels by device time, then the compiled Triton kernels' resources."""
    calls = int(payload.get("calls", 1)) or 1
    kernels = payload.get("kernels", [])
    total_us = sum(float(k["total_us"]) for k in kernels)
    lines = [
        f"device: {payload.get('device_name', '?')}; {calls} profiled calls after {payload.get('warmup', 0)} warm-up calls; "
        f"kernel time per call {total_us / calls / 1000:.4f} ms (device time of the kernels, launch gaps not included)",
        "kernels by device time (name: launches per call, us per call, share):",
    ]
    for k in kernels[:40]:
        share = 100 * float(k["total_us"]) / total_us if total_us else 0.0
        lines.append(f"  {k['name']}: {k['calls'] / calls:g}, {float(k['total_us']) / calls:.1f} us, {share:.1f}%")
    if len(kernels) > 40:
        lines.append(f"  ... and {len(kernels) - 40} more")
    triton = payload.get("triton", [])
    if triton:
        lines.append("Triton kernels as compiled (registers per thread, spilled registers, shared memory per program):")
        for t in triton:
            lines.append(
                f"  {t['name']}: {t.get('registers')} registers, {t.get('spills')} spills, {t.get('shared_bytes')} B shared, "
                f"{t.get('num_warps')} warps, {t.get('num_stages')} stages"
            )
    else:
        lines.append("no compiled Triton kernel found among the solution's module-level names")
    lines.append(f"sandbox: {confinement}")
    return "\n".join(lines)
