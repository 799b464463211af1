"""Code and diffs of revisions, read from a session's git workspace (thread-safe, cached)."""

from __future__ import annotations

import difflib
import threading
from collections import OrderedDict

from rich.text import Text

from workbench.session.workspace import Workspace
from workbench.tui.widgets.code_view import highlight_diff, highlight_python

CACHE_SIZE = 256


class Rendered(tuple[str, list[Text], str, list[Text]]):
    """(code, its highlighted lines, diff, its highlighted lines)."""


class CodeSource:
    """`code_and_diff(sha, previous_sha)` for one file of one workspace; called from worker threads."""

    def __init__(self, workspace: Workspace, path: str) -> None:
        self.workspace = workspace
        self.path = path
        self._lock = threading.Lock()  # one GitPython repository is not safe to share between threads (nor the caches)
        self._texts: OrderedDict[str, str | None] = OrderedDict()
        self._results: OrderedDict[tuple[str, str | None], Rendered] = OrderedDict()

    def _text(self, sha: str) -> str | None:
        if sha in self._texts:
            self._texts.move_to_end(sha)
            return self._texts[sha]
        text = self.workspace.read_text(sha, self.path)
        self._texts[sha] = text
        if len(self._texts) > CACHE_SIZE:
            self._texts.popitem(last=False)
        return text

    def cached(self, sha: str, previous: str | None) -> Rendered | None:
        with self._lock:
            return self._results.get((sha, previous))

    def code_and_diff(self, sha: str, previous: str | None) -> Rendered:
        """The file at `sha` and its unified diff from `previous` ("" when there is no previous revision),
        each with its highlighted lines (done here, in the worker, so the UI thread only draws). The lock is
        held for git and the caches only: `cached`, asked on the UI thread at every move, never waits for a
        highlighting."""
        key = (sha, previous)
        with self._lock:
            if key in self._results:
                return self._results[key]
            code = self._text(sha)
            before = self._text(previous) if previous else None
        diff = ""
        if previous is not None:
            diff = "".join(
                difflib.unified_diff(
                    (before or "").splitlines(keepends=True),
                    (code or "").splitlines(keepends=True),
                    fromfile=f"a/{self.path} ({previous[:10]})",
                    tofile=f"b/{self.path} ({sha[:10]})",
                )
            )
        code = code if code is not None else ""
        result = Rendered((code, highlight_python(code), diff, highlight_diff(diff)))
        with self._lock:
            self._results[key] = result
            if len(self._results) > CACHE_SIZE:
                self._results.popitem(last=False)
        return result
