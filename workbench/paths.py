"""Where the workbench finds its data, in one place for the CLI, the TUI and the evaluation processes.

Roots, each chosen the same way: an explicit argument (a CLI flag such as `--tasks-dir`), else its
environment variable, else the folder of that name in the checkout the package runs from:

| root | flag | variable | default |
| --- | --- | --- | --- |
| tasks | `--tasks-dir` | `D2K_TASKS_DIR` | `<checkout>/tasks` |
| guidance | `--guidance-dir` | `D2K_GUIDANCE_DIR` | `<checkout>/guidance` |
| sessions | `--sessions-dir` | `D2K_SESSIONS_DIR` | `<checkout>/sessions` |
| shipped example sessions | - | `D2K_EXAMPLES_DIR` | `<checkout>/sessions/examples` |
| campaign files (the TUI's Campaigns screen) | - | `D2K_CAMPAIGNS_DIR` | `<checkout>/campaigns` |

The checkout (`REPO_ROOT`) is the folder above the `workbench` package: the workbench is installed
editable from its repository (`pip install -e .`, as the README's set-up does), so the defaults do not
depend on the current directory. `IMPORT_ROOT` is a different thing that happens to be the same folder:
what the checker and the solution process put on their import path so that they import this same
package.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
IMPORT_ROOT = PACKAGE_DIR.parent  # the evaluation processes import `workbench` from here
REPO_ROOT = PACKAGE_DIR.parent  # the checkout: default home of tasks/, guidance/, sessions/ and .tools/
TOOLS_DIR = REPO_ROOT / ".tools"  # tools the set-up installs for this checkout (bubblewrap)

ENV_VARS = {
    "tasks": "D2K_TASKS_DIR",
    "guidance": "D2K_GUIDANCE_DIR",
    "sessions": "D2K_SESSIONS_DIR",
    "examples": "D2K_EXAMPLES_DIR",
    "campaigns": "D2K_CAMPAIGNS_DIR",
}
DEFAULTS = {
    "tasks": REPO_ROOT / "tasks",
    "guidance": REPO_ROOT / "guidance",
    "sessions": REPO_ROOT / "sessions",
    "examples": REPO_ROOT / "sessions" / "examples",
    "campaigns": REPO_ROOT / "campaigns",
}


def _root(kind: str, explicit: Path | None) -> Path:
    if explicit is not None:
        return Path(explicit)
    from_env = os.environ.get(ENV_VARS[kind])
    if from_env:
        return Path(from_env)
    return DEFAULTS[kind]


def tasks_root(explicit: Path | None = None) -> Path:
    return _root("tasks", explicit)


def guidance_root(explicit: Path | None = None) -> Path:
    return _root("guidance", explicit)


def sessions_root(explicit: Path | None = None) -> Path:
    return _root("sessions", explicit)


def examples_root(explicit: Path | None = None) -> Path:
    return _root("examples", explicit)


def campaigns_root(explicit: Path | None = None) -> Path:
    return _root("campaigns", explicit)


def default_help(kind: str) -> str:
    """The default of a root as the CLI's help text says it."""
    return f"${ENV_VARS[kind]}, else {DEFAULTS[kind]}"
