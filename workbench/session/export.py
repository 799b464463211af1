"""`session export`: a finished session in the shipped-example form (session.toml, events.jsonl, workspace.bundle)."""

from __future__ import annotations

import shutil
from pathlib import Path

from workbench.errors import SessionError, UsageError
from workbench.session.layout import BUNDLE_NAME, SessionRef
from workbench.session.store import SessionStore


def export_target(ref: SessionRef, dest: Path) -> Path:
    """Where an export of `ref` to `dest` goes: dest/<id> when dest is an existing folder named otherwise."""
    return dest / ref.id if dest.is_dir() and dest.name != ref.id else dest


def export_session(store: SessionStore, ref: SessionRef, dest: Path) -> Path:
    """Write session.toml, events.jsonl and the workspace's whole git history as one bundle file; returns
    the folder written. The store reads such a folder as a read-only session (as under sessions/examples).

    Nothing else of the session folder is copied (not the log's integrity key, not the live workspace).
    SessionError while a runner runs the session; UsageError when the target exists and is not empty.
    """
    if store.is_running(ref):
        raise SessionError(f"session {ref.id} is being run; export it when it has finished")
    target = export_target(ref, dest)
    if target.exists() and any(target.iterdir()):
        raise UsageError(f"{target} exists and is not empty")
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ref.config_path, target / ref.config_path.name)
    shutil.copy2(ref.log_path, target / ref.log_path.name)
    store.workspace(ref).export_bundle(target / BUNDLE_NAME)
    return target
