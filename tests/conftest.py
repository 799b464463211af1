"""Shared fixtures: the repository's roots, and scratch copies of tasks to break on purpose."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workbench import paths

REPO = paths.REPO_ROOT


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def task_copy(tmp_path: Path) -> Path:
    """A writable copy of tasks/muon_orthogonalize under tmp_path/tasks/."""
    dest = tmp_path / "tasks" / "muon_orthogonalize"
    shutil.copytree(REPO / "tasks" / "muon_orthogonalize", dest)
    return dest


@pytest.fixture
def guidance_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "guidance" / "muon_orthogonalize"
    shutil.copytree(REPO / "guidance" / "muon_orthogonalize", dest)
    return dest


# Kernels in test modules run under the Triton interpreter on this CPU-only machine.
if not __import__("torch").cuda.is_available():
    __import__("os").environ.setdefault("TRITON_INTERPRET", "1")
