"""The profile tool's back end: the agent's solution profiled in a sandboxed process (GPU sessions only).

The solution is the agent's code, so it runs like the harness's solution process: a fresh interpreter
started through `workbench.harness.host.sandbox.isolate` (an empty root with only the system folders, the
interpreter, the package's modules the profile host imports and a scratch folder bound: no network, a
clean environment, nothing else of the machine visible), the scratch folder holding copies of the
solution and the task's inputs.py. The device lock of the sessions root is held meanwhile, so a
profile never overlaps an evaluation on the same device. The process (`profile_host.py`) prints one JSON
line; this module turns it into the tool's text.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from workbench.agent.tools import Stopped, ToolError
from workbench.catalog import Task
from workbench.harness.host import sandbox
from workbench.harness.host.child import die_with_parent
from workbench.harness.host.evaluate import hidden_paths
from workbench.harness.host.sandbox import Launch
from workbench.session.evaluation import LOCKS_DIR, device_lock

# The host runs in the sandboxed solution process (it loads the agent's solution), so it lives with the
# solution process's code; it is loaded from its file, the one file the sandbox binds of this package.
HOST_SPEC = importlib.util.find_spec("workbench.harness.solution.profile_host")  # found, not imported (torch)
HOST_FILE = Path(HOST_SPEC.origin if HOST_SPEC is not None and HOST_SPEC.origin else "profile_host.py").resolve()
HOST_CODE = (
    "import sys, importlib.util as u; sys.path[:0] = {path!r}; s = u.spec_from_file_location('profile_host', {host!r}); "
    "m = u.module_from_spec(s); s.loader.exec_module(m); sys.exit(m.main(sys.argv))"
)
PREFIX = "D2K_PROFILE "


class SandboxedProfiler:
    """torch.profiler and Triton's compiled metadata, from a sandboxed run of the solution on `device`."""

    def __init__(self, device: str, sessions_root: Path, timeout_s: float = 300.0, warmup: int = 3, calls: int = 10) -> None:
        self.device = device
        self.sessions_root = sessions_root
        self.timeout_s = timeout_s
        self.warmup = warmup
        self.calls = calls

    def _environment(self) -> dict[str, str]:
        return sandbox.worker_env(self.device)

    def command(self, task: Task, scratch: Path) -> Launch:
        """The sandboxed launch (allow-list: `sandbox.isolate`), as the harness's solution process gets."""
        env = self._environment()
        interpreter = sandbox.interpreter_paths(env)
        search_path = sandbox.import_path(interpreter)
        code = HOST_CODE.format(path=search_path, host=str(HOST_FILE))
        argv = [sys.executable, "-I", "-c", code, str(scratch / "request.json")]
        readable = [*interpreter, HOST_FILE, scratch]
        hidden = [Path(p) for p in hidden_paths(task, [self.sessions_root])]
        launch = sandbox.isolate(argv, device=self.device, env=env, readable=readable, hidden=sandbox.default_hidden(hidden))
        if launch.info.kind == "none":
            launch.env["PATH"] = os.environ.get("PATH", env["PATH"])
        return launch

    def profile(self, task: Task, solution: Path, workload: str, stop: threading.Event) -> str:
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
            launch = self.command(task, scratch)
            confinement = launch.info.detail if launch.info.kind != "none" else f"none ({launch.info.detail})"
            output = self._run(launch, stop)
        payload = next(
            (json.loads(line[len(PREFIX) :]) for line in reversed(output.splitlines()) if line.startswith(PREFIX)), None
        )
        if payload is None:
            tail = "\n".join(output.strip().splitlines()[-30:])
            raise ToolError(f"the profile run ended without a result; its output:\n{tail}")
        if "error" in payload:
            raise ToolError(f"the solution failed while being profiled: {payload['error']}")
        return format_profile(payload, confinement)

    def _run(self, launch: Launch, stop: threading.Event) -> str:
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as out:
            try:
                process = subprocess.Popen(
                    launch.command,
                    executable=launch.executable,
                    pass_fds=launch.pass_fds,
                    env=launch.env,
                    cwd="/",
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
            finally:
                launch.close()
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
