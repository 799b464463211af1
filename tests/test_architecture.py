"""The architecture's map is written from the import contract, and the contract holds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_docs_architecture_is_written_from_the_current_contract() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "architecture_doc.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_a_layer_that_imports_upwards_breaks_the_contract(tmp_path: Path) -> None:
    """The contract can fail: a copy of the package in which llm imports the TUI is refused."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed in this environment")
    shutil.copytree(REPO / "workbench", tmp_path / "workbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    prices = tmp_path / "workbench" / "llm" / "prices.py"
    prices.write_text(prices.read_text(encoding="utf-8") + "\nimport workbench.tui  # upwards\n", encoding="utf-8")
    done = subprocess.run(
        [lint, "--no-cache", "--contract", "layers"], cwd=tmp_path, capture_output=True, text=True, check=False,
        env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)},
    )  # fmt: skip
    assert done.returncode != 0 and "workbench.llm is not allowed to import workbench.tui" in done.stdout, done.stdout[-2000:]
