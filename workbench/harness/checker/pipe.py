"""The checker's two ways to talk to the parent, torch-free: progress lines on stderr, and the report so
far as JSON lines on the result pipe (the last complete one counts)."""

from __future__ import annotations

import os
import sys

from workbench.harness.protocol.messages import PROGRESS_PREFIX, WorkerResult
from workbench.harness.protocol.report import EvalReport


def progress(message: str) -> None:
    print(PROGRESS_PREFIX + message, file=sys.stderr, flush=True)


class ResultPipe:
    """The pipe to the parent: one line per write, the report so far (the last complete one counts)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, report: EvalReport, complete: bool, current: str | None = None) -> None:
        line = WorkerResult(complete=complete, current_workload=current, report=report).model_dump_json() + "\n"
        data = line.encode()
        while data:
            data = data[os.write(self.fd, data) :]
