"""`session rm`: delete a session's folder (session.toml, the log, the workspace and its git history).

Never a shipped example, never a session being run: the session's runner lock is held while the folder
is deleted, so no runner can start on it half-way.
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

from workbench.errors import SessionError
from workbench.session.eventlog import LOCK_NAME
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore


def _is_example(store: SessionStore, ref: SessionRef) -> bool:
    if ref.read_only:
        return True
    if store.examples is None:
        return False
    return ref.dir.resolve().is_relative_to(Path(store.examples).resolve())


def check_removable(store: SessionStore, ref: SessionRef) -> None:
    """SessionError when `ref` is a shipped example or is being run (say why and what to do)."""
    if _is_example(store, ref):
        raise SessionError(f"session {ref.id} is a shipped example and read-only; it cannot be deleted")
    if store.is_running(ref):
        raise SessionError(f"session {ref.id} is being run; stop it first: d2k-workbench session stop {ref.id}")


def remove_session(store: SessionStore, ref: SessionRef) -> None:
    """Delete the session's folder. SessionError (and nothing deleted) for an example or a running session."""
    check_removable(store, ref)
    with (ref.dir / LOCK_NAME).open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a runner started since the check above
            raise SessionError(f"session {ref.id} is being run; stop it first: d2k-workbench session stop {ref.id}") from None
        shutil.rmtree(ref.dir)
