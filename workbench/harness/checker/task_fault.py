"""How the checker words a task that cannot be used, torch-free: imported by the entry point (a task that
does not load) and by the checker process (a task file that fails while the evaluation runs)."""

from __future__ import annotations

from pathlib import Path


def task_fault_message(exc: BaseException, task_dir: Path) -> str:
    """One line: which task file failed, where, and how (the traceback's innermost frame in the task)."""
    import traceback  # noqa: PLC0415 (only on a task's failure)

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(str(task_dir.resolve()))]
    where = f" ({Path(frames[-1].filename).name} line {frames[-1].lineno})" if frames else ""
    return f"the task {task_dir.name} cannot be used: {type(exc).__name__}: {exc}{where}"
