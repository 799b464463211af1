"""Imported tasks checked on the CPU, no GPU needed: the sandboxed task-check process (no torch here).

`workbench.harness.probe.task_check` runs in the allow-list sandbox that the import probe runs in, with the
task folders it is asked about bound read-only; this module starts it, sends it one request per task and
validates every answer (`CheckAnswer`, `DomainAnswer`, `BatteryAnswer`). A process that dies or does not
answer in time fails the task it was on, and the next task gets a fresh process. Three uses:

- `import check DIR`: every imported reference run on its smoke workloads (which run, how long, which fail);
- the import itself: each input's domain tried before the task is written (`domain_of`);
- `import battery DIR...`: generic wrong answers held to the harness's comparison (docs/import.md's table).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.harness.host import sandbox
from workbench.harness.host.probe import ProbeProcess, start_piped_worker

WORKER_MODULE = "workbench.harness.probe.task_check"
WORKER_CODE = "import sys; sys.path[:0] = {path!r}; from workbench.harness.probe.task_check import main; sys.exit(main())"
START_GRACE_S = 60.0  # the process's start (interpreter, torch) on top of a request's own time
LEVELS = ("wide", "signed", "scaled", "peer")  # workbench/harness/probe/peer_domain.py's, widest first


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class WorkloadRun(_Answer):
    workload: str = Field(max_length=200)
    status: Literal["ran", "failed"]
    inputs_s: float | None = None
    reference_s: float | None = None
    nonfinite: int = 0
    elements: int = 0
    message: str = Field(default="", max_length=2000)


class CheckAnswer(_Answer):
    task: str
    workloads: list[WorkloadRun] = Field(max_length=256)


class DomainChoice(_Answer):
    level: Literal["wide", "signed", "scaled", "peer"]
    why: str = Field(default="", max_length=4000)


class DomainAnswer(_Answer):
    task: str
    domain: dict[str, DomainChoice]
    conditioned: bool = True


class AnswerRow(_Answer):
    answer: Literal["copy", "zeros", "constant", "scaled", "relu", "half", "neighbour"]
    wrong: bool
    accepted: bool
    peer_accepts: bool
    peer_strict_accepts: bool | None = None
    why: str = Field(default="", max_length=1000)


class BatteryAnswer(_Answer):
    task: str
    neighbour: str | None = None
    domain: dict[str, str] = {}
    answers: list[AnswerRow] = Field(max_length=16)
    skipped_sets: dict[str, str] = {}  # input sets (peer, stress) the reference raises on, and why


class Failed(_Answer):
    """A request the process could not answer: its error, or why no answer came."""

    error: str


class CheckProcess(ProbeProcess):
    """The sandboxed task-check process, seeing `folders` read-only: `ask(request, model)` per task, `close()`.
    (The import probe's process handling, another worker module in it.)"""

    def __init__(self, folders: Sequence[Path]) -> None:
        super().__init__()
        self.folders = [Path(f).resolve() for f in folders]

    def __enter__(self) -> CheckProcess:
        return self

    def _start(self) -> subprocess.Popen[bytes]:
        env = sandbox.worker_env("cpu")
        env["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "2")
        interpreter = sandbox.interpreter_paths(env)
        argv = [sys.executable, "-I", "-c", WORKER_CODE.format(path=sandbox.import_path(interpreter))]
        readable = [*interpreter, *sandbox.module_files([WORKER_MODULE]), *self.folders]
        launch = sandbox.isolate(argv, device="cpu", env=env, readable=readable, hidden=sandbox.default_hidden())
        self.sandbox_line = f"{launch.info.kind}: {launch.info.detail}"
        return start_piped_worker(launch)

    def ask(self, request: dict[str, Any], model: type[_Answer], timeout_s: float = 300.0) -> _Answer:
        """The process's answer to one request as `model`, or `Failed` with why."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps({**request, "timeout_s": timeout_s}).encode() + b"\n")
            process.stdin.flush()
        except OSError:
            self.close()
            return Failed(error="the task-check process ended before the request")
        line = self._read_line(process, timeout_s + START_GRACE_S)
        if line is None:
            self.close()
            return Failed(error="the task-check process ended or did not answer in time")
        try:
            data = json.loads(line)
            if not data.get("ok"):
                return Failed(error=str(data.get("error", "no answer"))[:2000])
            return model.model_validate(data)
        except (ValueError, ValidationError) as exc:
            self.close()
            return Failed(error=f"the task-check process's answer does not validate: {str(exc)[:300]}")


# ---- the import: each input's domain ----------------------------------------------------------------------


def domain_of(process: CheckProcess, folder: Path, timeout_s: float) -> tuple[dict[str, DomainChoice], str]:
    """Each input's level, as the process found it by trying (where it could not: the peer's values, and why)."""
    answer = process.ask({"op": "domain", "folder": str(folder)}, DomainAnswer, timeout_s)
    if isinstance(answer, DomainAnswer):
        return dict(answer.domain), ""
    assert isinstance(answer, Failed)
    return {}, answer.error


# ---- check and battery over a catalogue -------------------------------------------------------------------

Progress = Callable[[int, int, str], None]


def check_tasks(folders: list[Path], progress: Progress | None = None, timeout_s: float = 300.0) -> list[CheckAnswer | Failed]:
    """Every task's reference on its smoke workloads, in `folders`' order."""
    results: list[CheckAnswer | Failed] = []
    with CheckProcess(sorted({f.parent for f in folders})) as process:
        for index, folder in enumerate(folders):
            if progress:
                progress(index, len(folders), folder.name)
            answer = process.ask({"op": "check", "folder": str(folder)}, CheckAnswer, timeout_s)
            results.append(answer)  # type: ignore[arg-type]
    return results


def battery_tasks(
    requests: list[dict[str, Any]], progress: Progress | None = None, timeout_s: float = 600.0
) -> list[BatteryAnswer | Failed]:
    """The battery on each task (`requests`: folder, neighbours, peer tolerances), in order."""
    folders = sorted({Path(r["folder"]).parent for r in requests})
    results: list[BatteryAnswer | Failed] = []
    with CheckProcess(folders) as process:
        for index, request in enumerate(requests):
            if progress:
                progress(index, len(requests), Path(request["folder"]).name)
            answer = process.ask({"op": "battery", **request}, BatteryAnswer, timeout_s)
            results.append(answer)  # type: ignore[arg-type]
    return results
