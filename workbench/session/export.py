"""`session export`: a finished session in the shipped-example form (session.toml, events.jsonl, workspace.bundle)."""

from __future__ import annotations

import shutil
from pathlib import Path

from workbench.errors import SessionError, UsageError
from workbench.session.layout import BUNDLE_NAME, SessionRef
from workbench.session.store import SessionStore


def check_target(dest: Path) -> None:
    """UsageError unless `dest` can be the export's folder: absent, or an empty folder."""
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest} exists and is not a folder; give the folder to create")
    if dest.is_dir() and any(dest.iterdir()):
        raise UsageError(f"{dest} exists and is not empty; give a new folder (it becomes the exported session itself)")


def export_session(store: SessionStore, ref: SessionRef, dest: Path) -> Path:
    """Write session.toml, events.jsonl and the workspace's whole git history as one bundle file into
    `dest` itself (created, with its parents; an existing empty folder is used); returns `dest`. The store
    reads such a folder as a read-only session (as under sessions/examples; name it after the id there).

    Nothing else of the session folder is copied (not the log's integrity key, not the live workspace).
    SessionError while a runner runs the session; UsageError when `dest` exists and is not an empty folder.
    """
    if store.is_running(ref):
        raise SessionError(f"session {ref.id} is being run; export it when it has finished")
    if not ref.log_path.is_file():
        raise SessionError(f"session {ref.id} has no event log yet; run it before exporting it")
    check_target(dest)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ref.config_path, dest / ref.config_path.name)
    shutil.copy2(ref.log_path, dest / ref.log_path.name)
    store.workspace(ref).export_bundle(dest / BUNDLE_NAME)
    return dest
