from __future__ import annotations

from pathlib import Path

import pytest

from workbench.session.store import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions", examples=None)
