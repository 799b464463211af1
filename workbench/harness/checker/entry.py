"""The trusted checker's entry point: `python -m workbench.harness.checker.entry RESULT_FD [WARM_FD]`.

WARM_FD, where the host has a warm pool: a connection to a solution zygote (host/solution_pool.py),
used when this evaluation's sandbox is the one the zygote was started for (launch.launch_warm).

Reads the request (with the per-evaluation secret) from stdin, loads the task, reads the solution's
source for the static policy and, when the source may run, starts the sandboxed solution process at
once (`launch.py`): the solution process's interpreter starts and imports torch while this process
imports torch and the rest of the checker (`process.py`), which then takes over. A source the policy
refuses, or a task that does not load, is reported without either import. Imports no torch itself.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

from workbench.catalog.loader import load_task
from workbench.harness.checker.launch import Launched, launch, launch_warm
from workbench.harness.checker.pipe import ResultPipe, progress
from workbench.harness.checker.task_fault import task_fault_message
from workbench.harness.policy import checker as policy_checker
from workbench.harness.protocol.messages import EvalRequest
from workbench.harness.protocol.report import EvalReport, Status, Violation


def main(argv: list[str]) -> int:
    started = time.perf_counter()
    results = ResultPipe(int(argv[1]))
    os.set_inheritable(results.fd, False)  # never passed on to the solution process
    warm = socket.socket(fileno=int(argv[2])) if len(argv) > 2 else None
    if warm is not None:
        warm.set_inheritable(False)
    try:
        return _check(results, warm, started)
    finally:
        if warm is not None:
            warm.close()  # unused (a refusal, a plain start): the zygote's keeper ends


def _check(results: ResultPipe, warm: socket.socket | None, started: float) -> int:
    request = EvalRequest.model_validate_json(sys.stdin.read())
    deadline = time.monotonic() + request.timeout_s

    def early(task: str, status: Status, message: str, violations: list[Violation] | None = None) -> int:
        report = EvalReport(
            task=task, solution=request.solution, device=request.device, status=status, message=message,
            violations=violations or [],
        )  # fmt: skip
        report.duration_s = time.perf_counter() - started
        results.write(report, complete=True)
        return 0

    task_dir = Path(request.task_dir)
    try:
        task = load_task(task_dir)
    except Exception as exc:
        return early(task_dir.name, "task_error", task_fault_message(exc, task_dir))
    solution_file = Path(request.solution).resolve()
    source = solution_file.read_text(encoding="utf-8", errors="replace")
    try:
        static = policy_checker.check_source(source, str(solution_file))
    except SyntaxError as exc:
        where = f" ({solution_file.name} line {exc.lineno})" if exc.lineno else f" ({solution_file.name})"
        return early(task.id, "compile_error", f"SyntaxError: {exc.msg}{where}")
    if static and request.static_policy:
        return early(task.id, "policy_violation", static[0].describe(), static)
    if not policy_checker.has_run_function(source):
        return early(task.id, "compile_error", "the solution defines no top-level run(...) function")

    progress("starting the solution process")
    hidden = [Path(p) for p in request.hidden]
    launched: Launched | None = None
    if warm is not None and request.warm_solution is not None:
        launched = launch_warm(warm, request.warm_solution, solution_file, request.device, hidden)
    if launched is None:
        launched = launch(solution_file, request.device, hidden)
    try:
        from workbench.harness.checker import process  # noqa: PLC0415 (torch: imported while the solution process starts)
    except BaseException:
        launched.kill()
        raise
    return process.run(request, results, task, launched, started, deadline)


if __name__ == "__main__":
    from workbench.harness.solution.fast_exit import exit_now

    exit_now(main(sys.argv))
