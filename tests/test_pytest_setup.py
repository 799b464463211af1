"""How the test run itself is set up, where it could disturb what it tests."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from workbench import paths


def test_the_snapshot_report_is_written_outside_the_repository_unless_one_is_named(pytestconfig: pytest.Config) -> None:
    """A file appearing in the repository root changes what every sandbox started then hides, so evaluations
    running beside a failed snapshot test would lose their warm start (tests/conftest.py)."""
    if any(str(arg).startswith("--snapshot-report") for arg in pytestconfig.invocation_params.args):
        pytest.skip("this run names its own snapshot report")
    report = Path(pytestconfig.option.snapshot_report)
    assert report.parent == Path(tempfile.gettempdir())
    assert not report.resolve().is_relative_to(paths.REPO_ROOT.resolve())
