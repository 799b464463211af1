"""Where the workbench finds tasks, guidance and sessions.

Precedence for each root: an explicit argument (a CLI flag), then the environment variable,
then the folder beside the package in this repository.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _root(explicit: Path | None, env_var: str, default_name: str) -> Path:
    if explicit is not None:
        return Path(explicit)
    from_env = os.environ.get(env_var)
    if from_env:
        return Path(from_env)
    return REPO_ROOT / default_name


def tasks_root(explicit: Path | None = None) -> Path:
    return _root(explicit, "D2K_TASKS_DIR", "tasks")


def guidance_root(explicit: Path | None = None) -> Path:
    return _root(explicit, "D2K_GUIDANCE_DIR", "guidance")


def sessions_root(explicit: Path | None = None) -> Path:
    return _root(explicit, "D2K_SESSIONS_DIR", "sessions")
