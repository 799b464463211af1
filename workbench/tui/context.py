"""What every screen of the app shares: the catalogue, the session store, the roots they came from, and
what the launch dialog was last set to (kept per app, never in a global)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from workbench import paths
from workbench.catalog import Catalog, GuidanceConfig

if TYPE_CHECKING:  # the session package loads after the first screen is drawn (the store's first use)
    from workbench.session.store import SessionStore

EXAMPLES_DIR = paths.DEFAULTS["examples"]  # the shipped example sessions (as workbench.session.store.EXAMPLES_DIR)

_NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")
DEFAULT_IDLE_EXIT_MIN = 30  # a human session launched from the workbench ends after this long without a revision


@dataclass
class LaunchChoices:
    """The launch dialog's last choices in this app, so that it opens as it was left (the fields as typed)."""

    task: str = ""  # "" = the first task (a task highlighted where `n` was pressed comes first)
    guidance: GuidanceConfig = "none"
    driver: str = "human"
    command: str = ""
    device: str = "cpu"
    idle_exit_min: str = str(DEFAULT_IDLE_EXIT_MIN)  # human driver; "" = never
    eval_timeout_s: str = ""  # "" = the harness default
    provider: str = "openai"  # agent driver: the API (its key comes from the environment, never from the dialog)
    model: str = ""  # agent driver: the model's name at the provider
    base_url: str = ""  # agent driver: "" = the provider's own API
    max_turns: str | None = None  # agent driver: model calls at most; None: the session default, shown as its number
    max_usd: str = ""  # agent driver: "" = no dollar budget
    allow_unpriced: bool = False  # agent driver: run a model missing from the price table
    agent_mode: str = "code"  # agent driver: code or design


@dataclass(frozen=True)
class WorkbenchContext:
    """Roots and read APIs, built once per app (no module-level state)."""

    tasks_dir: Path
    guidance_dir: Path
    sessions_dir: Path
    examples_dir: Path | None = EXAMPLES_DIR
    campaigns_dir: Path = field(default_factory=lambda: paths.campaigns_root().resolve())
    launch: LaunchChoices = field(default_factory=LaunchChoices, compare=False)
    check_providers: bool = True  # an agent session's provider answers one call before it is created

    @classmethod
    def from_roots(
        cls,
        tasks_dir: Path | None = None,
        guidance_dir: Path | None = None,
        sessions_dir: Path | None = None,
        examples_dir: Path | None = EXAMPLES_DIR,
        campaigns_dir: Path | None = None,
    ) -> WorkbenchContext:
        """Explicit roots first, then D2K_TASKS_DIR / D2K_GUIDANCE_DIR / D2K_SESSIONS_DIR / D2K_CAMPAIGNS_DIR,
        then the repository's."""
        return cls(
            paths.tasks_root(tasks_dir).resolve(),
            paths.guidance_root(guidance_dir).resolve(),
            paths.sessions_root(sessions_dir).resolve(),
            examples_dir,
            paths.campaigns_root(campaigns_dir).resolve(),
        )

    @property
    def catalog(self) -> Catalog:
        return Catalog(self.tasks_dir, self.guidance_dir)

    @cached_property
    def store(self) -> SessionStore:
        """One store per app, so that its cache of session summaries lasts between refreshes."""
        from workbench.session.store import SessionStore  # noqa: PLC0415 (start-up time: loaded after the first paint)

        return SessionStore(self.sessions_dir, self.examples_dir)

    def runner_command(self, session_id: str, idle_exit_s: float | None = None) -> list[str]:
        """`d2k-workbench session run ID` with this app's roots (and `--idle-exit SECONDS` when given), by
        the interpreter running the app."""
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
            *(["--idle-exit", f"{idle_exit_s:g}"] if idle_exit_s is not None else []),
        ]


def gpu_devices() -> list[str]:
    """cuda devices the NVIDIA driver lists, without importing torch (empty on a machine with no GPU)."""
    try:
        count = sum(1 for _ in _NVIDIA_GPUS.iterdir())
    except OSError:
        return []
    return ["cuda"] + [f"cuda:{i}" for i in range(count)] if count else []
