"""The architecture's map is written from the import contract, the contract holds, and no modules import
each other in a circle."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parent.parent
NOT_YET_ACYCLIC: tuple[str, ...] = ()  # every package is acyclic (the TUI since issue 57: screens see the app as tui/shell.py)


def test_docs_architecture_is_written_from_the_current_contract() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "architecture_doc.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def lint_a_copy(tmp_path: Path, module: str, added_line: str, contract: str) -> subprocess.CompletedProcess[str]:
    """`lint-imports --contract CONTRACT` on a copy of the package in which `module` (a path below workbench/)
    ends with `added_line`."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed in this environment")
    shutil.copytree(REPO / "workbench", tmp_path / "workbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    source = tmp_path / "workbench" / module
    source.write_text(source.read_text(encoding="utf-8") + f"\n{added_line}\n", encoding="utf-8")
    return subprocess.run(
        [lint, "--no-cache", "--contract", contract], cwd=tmp_path, capture_output=True, text=True, check=False,
        env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)},
    )  # fmt: skip


def test_a_layer_that_imports_upwards_breaks_the_contract(tmp_path: Path) -> None:
    """The contract can fail: a copy of the package in which llm imports the TUI is refused."""
    done = lint_a_copy(tmp_path, "llm/prices.py", "import workbench.tui  # upwards", "layers")
    assert done.returncode != 0 and "workbench.llm is not allowed to import workbench.tui" in done.stdout, done.stdout[-2000:]


def test_a_circle_breaks_the_contract(tmp_path: Path) -> None:
    """The cycle contract can fail: a copy in which the session layout imports the event log back is refused."""
    done = lint_a_copy(tmp_path, "session/layout.py", "import workbench.session.eventlog  # back", "no-cycles")
    assert done.returncode != 0 and "No cycles are allowed in workbench.session" in done.stdout, done.stdout[-2000:]


def import_cycles(graph: grimp.ImportGraph, skip: tuple[str, ...]) -> list[str]:
    """Each pair of modules that import each other, directly or through a chain, as its two shortest chains;
    pairs with a module inside a package of `skip` left out."""

    def skipped(module: str) -> bool:
        return any(module == package or module.startswith(package + ".") for package in skip)

    modules = sorted(m for m in graph.modules if m.startswith("workbench") and not skipped(m))
    imported = {m: graph.find_upstream_modules(m) for m in modules}  # what each module imports, through any chain
    cycles = []
    for a in modules:
        for b in sorted(m for m in imported[a] if m in imported and a < m and a in imported[m]):
            there, back = graph.find_shortest_chain(a, b), graph.find_shortest_chain(b, a)
            cycles.append(f"{' -> '.join(there or [])}  and back  {' -> '.join(back or [])}")
    return cycles


def test_no_import_cycles() -> None:
    """No two modules import each other, through any chain: function-level imports and those under
    `if TYPE_CHECKING:` count too, and so do a package's `__init__` and its own modules (which the
    `no-cycles` contract, comparing sibling modules with type-checking imports left out, does not see)."""
    graph = grimp.build_graph("workbench", cache_dir=None)
    cycles = import_cycles(graph, NOT_YET_ACYCLIC)
    assert not cycles, "modules that import each other:\n" + "\n".join(cycles)


def test_import_cycles_are_found() -> None:
    graph = grimp.ImportGraph()
    for name in ("workbench", "workbench.a", "workbench.b", "workbench.c", "workbench.tui", "workbench.tui.app"):
        graph.add_module(name)
    graph.add_import(importer="workbench.a", imported="workbench.b")
    graph.add_import(importer="workbench.b", imported="workbench.c")
    graph.add_import(importer="workbench.c", imported="workbench.a")
    graph.add_import(importer="workbench.tui", imported="workbench.tui.app")
    graph.add_import(importer="workbench.tui.app", imported="workbench.tui")
    assert import_cycles(graph, ("workbench.tui",)) == [
        "workbench.a -> workbench.b  and back  workbench.b -> workbench.c -> workbench.a",
        "workbench.a -> workbench.b -> workbench.c  and back  workbench.c -> workbench.a",
        "workbench.b -> workbench.c  and back  workbench.c -> workbench.a -> workbench.b",
    ]
    assert len(import_cycles(graph, ())) == 4
