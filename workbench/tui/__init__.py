"""The Textual workbench: browse tasks and guidance, launch, watch and replay sessions.

It never evaluates kernels or calls models in its own process: it starts `d2k-workbench session run`
subprocesses and reads what they write (session.toml, events.jsonl, the git workspace), so the live view
and a replay are one code path. Entry point: `run_app(...)` (what `d2k-workbench` with no command calls).
"""

from __future__ import annotations

from pathlib import Path


def run_app(tasks_dir: Path | None = None, guidance_dir: Path | None = None, sessions_dir: Path | None = None) -> None:
    """Open the workbench in this terminal (blocks until the user quits)."""
    from workbench.tui.app import WorkbenchApp  # noqa: PLC0415 (Textual loads when the app opens, not with the package)
    from workbench.tui.collector import freeze_startup_heap  # noqa: PLC0415 (with the app, as above)
    from workbench.tui.context import WorkbenchContext  # noqa: PLC0415 (Textual loads when the app opens, not with the package)

    app = WorkbenchApp(WorkbenchContext.from_roots(tasks_dir, guidance_dir, sessions_dir))
    freeze_startup_heap()  # the imports and the app just built live as long as the process
    app.run()
