"""Watch a workspace and report each debounced burst of writes (ignoring .git, caches, editor files)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from watchfiles import Change, DefaultFilter, watch

IGNORED_DIRS = (".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".triton", ".cache")


class WorkspaceFilter(DefaultFilter):
    """watchfiles' default filter (.git, __pycache__, *.pyc, swap files, ...) plus a few caches."""

    def __init__(self) -> None:
        super().__init__(ignore_dirs=(*DefaultFilter.ignore_dirs, *IGNORED_DIRS))


class Watcher:
    """Calls on_burst(paths) from its own thread after each burst of changes.

    A burst ends after quiet_ms without a change (at most max_wait_ms after it began). Every
    poll_s seconds without changes on_burst(set()) is called too, so that a change the OS did not
    report (or one made before the watch began) is still picked up by the caller's check.
    """

    def __init__(self, root: Path, on_burst: Callable[[set[str]], None], quiet_ms: int = 500,
                 max_wait_ms: int = 5000, poll_s: float = 2.0) -> None:
        self.root = root
        self._on_burst = on_burst
        self._quiet_ms = quiet_ms
        self._max_wait_ms = max(max_wait_ms, quiet_ms)
        self._poll_ms = int(poll_s * 1000)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="d2k-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        for changes in watch(
            self.root, watch_filter=WorkspaceFilter(), debounce=self._max_wait_ms, step=self._quiet_ms,
            stop_event=self._stop, rust_timeout=self._poll_ms, yield_on_timeout=True, raise_interrupt=False,
        ):
            if self._stop.is_set():
                return
            paths = {path for change, path in changes if change in (Change.added, Change.modified, Change.deleted)}
            self._on_burst(paths)
