"""Watch a workspace and report each debounced burst of writes (ignoring .git, caches, editor files)."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
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

    def __init__(
        self, root: Path, on_burst: Callable[[set[str]], None], quiet_ms: int = 500, max_wait_ms: int = 5000, poll_s: float = 2.0
    ) -> None:
        self.root = root
        self._on_burst = on_burst
        self._quiet_s = quiet_ms / 1000
        self._max_wait_s = max(max_wait_ms, quiet_ms) / 1000
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._batches: queue.Queue[set[str]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="d2k-watcher", daemon=True)
        self._reader = threading.Thread(target=self._read, name="d2k-watcher-read", daemon=True)

    def start(self) -> None:
        self._reader.start()
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for thread in (self._thread, self._reader):
            if thread.is_alive():
                thread.join(timeout)

    def _read(self) -> None:
        """Every change as watchfiles reports it, promptly, in small batches. A root that vanishes (or was never
        there) ends the reading, not the watcher: the poll keeps calling on_burst(set()), whose check then finds
        the workspace gone and says so, instead of a traceback on a thread nobody joins."""
        with contextlib.suppress(FileNotFoundError):
            for changes in watch(
                self.root,
                watch_filter=WorkspaceFilter(),
                debounce=50,
                step=10,
                stop_event=self._stop,
                rust_timeout=200,
                yield_on_timeout=True,
                raise_interrupt=False,
            ):
                if self._stop.is_set():
                    return
                paths = {path for change, path in changes if change in (Change.added, Change.modified, Change.deleted)}
                if paths:
                    self._batches.put(paths)

    def _run(self) -> None:
        """Bursts: from the first change until quiet_s without any (watchfiles' own debounce would end a
        burst of repeated writes to one file early, since it counts distinct changes), at most max_wait_s."""
        while not self._stop.is_set():
            try:
                paths = self._batches.get(timeout=self._poll_s)
            except queue.Empty:
                self._on_burst(set())
                continue
            began = time.monotonic()
            while time.monotonic() - began < self._max_wait_s and not self._stop.is_set():
                try:
                    paths |= self._batches.get(timeout=min(self._quiet_s, self._max_wait_s - (time.monotonic() - began)))
                except queue.Empty:
                    break
            if self._stop.is_set():
                return
            self._on_burst(paths)
