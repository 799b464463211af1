"""Fixtures of the judge's tests: a finished session with a failing, a passing and an incorrect revision of a
small candidate whose lines are known, the repository's catalogue, and an environment without API keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench import paths
from workbench.catalog import Catalog
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore

from .helpers import make_code_session, make_design_session

KEY_VARS = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS", "OPENAI_ADMIN_KEY",
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS",
)  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("D2K_SESSIONS_DIR", raising=False)
    yield


@pytest.fixture
def catalog() -> Catalog:
    return Catalog(paths.REPO_ROOT / "tasks", paths.REPO_ROOT / "guidance")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    return folder


@pytest.fixture
def store(root: Path) -> SessionStore:
    return SessionStore(root, examples=None)


@pytest.fixture
def session(root: Path) -> SessionRef:
    """Revisions: 1 the template (runtime_error), 2 the candidate (passed, the submission), 3 incorrect."""
    return make_code_session(root)


@pytest.fixture
def design_session(root: Path) -> SessionRef:
    return make_design_session(root)
