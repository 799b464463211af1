"""`report --figures DIR` where DIR cannot be made or written (issue 58, item 3): one line on stderr and exit
code 2 before any table is built, never a traceback after the whole report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import paths

EXAMPLES = paths.REPO_ROOT / "sessions" / "examples"


def report_figures(folder: Path, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    """`d2k-workbench report EXAMPLES --format md --figures folder` in a fresh interpreter; `unprivileged`:
    as a user without root's right to write anywhere (root runs it in a user namespace of its own)."""
    prefix: list[str] = []
    if unprivileged and os.geteuid() == 0:
        if shutil.which("unshare") is None or subprocess.run(["unshare", "--user", "true"], check=False).returncode:
            pytest.skip("running as root without user namespaces: a read-only folder cannot be made")
        prefix = ["unshare", "--user"]
    command = [*prefix, sys.executable, "-m", "workbench", "report", str(EXAMPLES), "--format", "md", "--figures", str(folder)]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=paths.REPO_ROOT, timeout=120)


def assert_refused_up_front(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --figures"), result.stderr
    assert all(word in lines[0] for word in words), lines[0]
    assert result.stdout == ""  # refused before the report: no table was built or printed


def test_a_figures_folder_under_a_file_is_refused_before_the_report(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    result = report_figures(tmp_path / "notes.txt" / "figures")
    assert_refused_up_front(result, "notes.txt is a file, not a folder")
    assert (tmp_path / "notes.txt").read_text() == "a file, not a folder"


def test_a_figures_folder_in_a_read_only_folder_is_refused_before_the_report(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = report_figures(locked / "figures", unprivileged=True)
        assert_refused_up_front(result, "cannot write in", "locked")
        assert not (locked / "figures").exists()
        existing = report_figures(locked, unprivileged=True)  # the read-only folder itself
        assert_refused_up_front(existing, "cannot write")
    finally:
        locked.chmod(0o755)


@pytest.mark.slow  # a whole report and its figures in a fresh interpreter (5-15 s); the fast subset has the same
# case in process: tests/scoring/test_report_cli.py::test_figures (a folder and its missing parent made, both figures)
def test_a_figures_folder_that_can_be_made_gets_the_figures(tmp_path: Path) -> None:
    result = report_figures(tmp_path / "new" / "figures")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "new" / "figures").iterdir()) == ["figure3_ablation.png", "figure4_sperf_turns.png"]
