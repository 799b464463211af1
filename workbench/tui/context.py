"""What every screen of the app shares: the catalogue, the session store and the roots they came from."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from workbench import paths
from workbench.catalog import Catalog
from workbench.session.store import EXAMPLES_DIR, SessionStore

_NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")


@dataclass(frozen=True)
class WorkbenchContext:
    """Roots and read APIs, built once per app (no module-level state)."""

    tasks_dir: Path
    guidance_dir: Path
    sessions_dir: Path
    examples_dir: Path | None = EXAMPLES_DIR

    @classmethod
    def from_roots(
        cls,
        tasks_dir: Path | None = None,
        guidance_dir: Path | None = None,
        sessions_dir: Path | None = None,
        examples_dir: Path | None = EXAMPLES_DIR,
    ) -> WorkbenchContext:
        """Explicit roots first, then D2K_TASKS_DIR / D2K_GUIDANCE_DIR / D2K_SESSIONS_DIR, then the repository's."""
        return cls(
            paths.tasks_root(tasks_dir).resolve(),
            paths.guidance_root(guidance_dir).resolve(),
            paths.sessions_root(sessions_dir).resolve(),
            examples_dir,
        )

    @property
    def catalog(self) -> Catalog:
        return Catalog(self.tasks_dir, self.guidance_dir)

    @cached_property
    def store(self) -> SessionStore:
        """One store per app, so that its cache of session summaries lasts between refreshes."""
        return SessionStore(self.sessions_dir, self.examples_dir)

    def runner_command(self, session_id: str) -> list[str]:
        """`d2k-workbench session run ID` with this app's roots, by the interpreter running the app."""
        script = Path(sys.executable).parent / "d2k-workbench"
        head = [str(script)] if script.is_file() and os.access(script, os.X_OK) else [sys.executable, "-m", "workbench"]
        return [
            *head,
            "session",
            "run",
            session_id,
            "--sessions-dir",
            str(self.sessions_dir),
            "--tasks-dir",
            str(self.tasks_dir),
            "--guidance-dir",
            str(self.guidance_dir),
        ]


def gpu_devices() -> list[str]:
    """cuda devices the NVIDIA driver lists, without importing torch (empty on a machine with no GPU)."""
    try:
        count = sum(1 for _ in _NVIDIA_GPUS.iterdir())
    except OSError:
        return []
    return ["cuda"] + [f"cuda:{i}" for i in range(count)] if count else []
