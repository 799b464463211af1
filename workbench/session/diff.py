"""The solution's unified diff between two revisions of a session, for `session diff` and the workbench.

    text = revision_diff(ref.dir, 2, 3)      # "" when both revisions hold the same solution

Revision numbers are those of `session show`: revision N is the N-th commit of the session's git history
(revision 1 the template), as the log records it; a commit the log has not recorded yet (the runner was
stopped before) counts by its place in the history. Shipped examples are read from their bundle.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from workbench.errors import UsageError
from workbench.session.config import load_config
from workbench.session.eventlog import read_log
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState
from workbench.session.store import open_workspace
from workbench.session.workspace import Workspace

NO_NEWLINE = "\\ No newline at end of file\n"


def _shas(ref: SessionRef, workspace: Workspace) -> dict[int, str]:
    shas = {number: commit.sha for number, commit in enumerate(workspace.history(), start=1)}
    logged = SessionState.from_events(read_log(ref.log_path).events).revisions
    shas.update({rev: revision.sha for rev, revision in logged.items()})
    return shas


def revision_shas(session_dir: Path) -> dict[int, str]:
    """Revision number -> commit sha, for every revision of the session (empty when it has none)."""
    ref = SessionRef(session_dir.name, session_dir)
    return _shas(ref, open_workspace(ref))


def check_revision(session_id: str, shas: dict[int, str], rev: int) -> str:
    """The revision's sha; UsageError giving the valid range for a number the session does not have."""
    if rev in shas:
        return shas[rev]
    if not shas:
        raise UsageError(f"session {session_id} has no revisions yet")
    raise UsageError(f"session {session_id} has no revision {rev}; its revisions are {min(shas)}..{max(shas)}")


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def unified(old: str | None, new: str | None, path: str, old_label: str, new_label: str, context: int = 3) -> str:
    """A unified diff of two versions of `path` (None: the file does not exist there), git-style headers
    ("--- a/path\\tlabel"), a missing final newline marked as diff and patch mark it."""
    out: list[str] = []
    for line in difflib.unified_diff(
        _lines(old),
        _lines(new),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile="/dev/null" if new is None else f"b/{path}",
        fromfiledate=old_label,
        tofiledate=new_label,
        n=context,
    ):
        out.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return "".join(out)


def revision_diff(session_dir: Path, a: int, b: int, *, context: int = 3) -> str:
    """The unified diff of the session's solution file from revision `a` to revision `b` ("" when they
    hold the same text). UsageError naming the valid range for a revision the session does not have;
    WorkspaceError when the session has no readable git history."""
    ref = SessionRef(session_dir.name, session_dir)
    solution = load_config(session_dir).solution
    workspace = open_workspace(ref)
    shas = _shas(ref, workspace)
    sha_a, sha_b = check_revision(ref.id, shas, a), check_revision(ref.id, shas, b)
    return unified(
        workspace.read_text(sha_a, solution),
        workspace.read_text(sha_b, solution),
        solution,
        f"rev {a} {sha_a[:10]}",
        f"rev {b} {sha_b[:10]}",
        context,
    )
