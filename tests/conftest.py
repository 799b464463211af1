"""Shared fixtures: the repository's roots, and scratch copies of tasks to break on purpose."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench import paths

REPO = paths.REPO_ROOT
SNAPSHOT_REPORT = "d2k-workbench-snapshot-report.html"


def pytest_configure(config: pytest.Config) -> None:
    """pytest-textual-snapshot writes its report of mismatched screens to ./snapshot_report.html by default: a new
    child of the repository root while other workers evaluate, which changes the paths their sandboxes hide and so
    sends their solution processes from the warm zygote to a plain start (checker/launch.py `launch_warm`). The
    report goes to the system's temporary folder instead (the plugin prints where), unless one is named."""
    if getattr(config.option, "snapshot_report", None) == "snapshot_report.html":
        config.option.snapshot_report = str(Path(tempfile.gettempdir()) / SNAPSHOT_REPORT)


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def task_copy(tmp_path: Path) -> Path:
    """A writable copy of tasks/muon_orthogonalize under tmp_path/tasks/."""
    dest = tmp_path / "tasks" / "muon_orthogonalize"
    shutil.copytree(REPO / "tasks" / "muon_orthogonalize", dest)
    return dest


TINY_WORKLOAD = "smoke_tiny"


@pytest.fixture(scope="session")
def tiny_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tasks root holding a copy of the Muon task whose only smoke workload is small (B=2, 64x192).

    CPU evaluations on it take seconds instead of a minute: for tests about sessions, the UI and the
    harness's rejections, where the size of the matrices does not matter.
    """
    root = tmp_path_factory.mktemp("tiny") / "tasks"
    shutil.copytree(
        REPO / "tasks" / "muon_orthogonalize", root / "muon_orthogonalize", ignore=shutil.ignore_patterns("__pycache__")
    )
    toml = root / "muon_orthogonalize" / "task.toml"
    text = toml.read_text()
    cut = text.index("[[smoke_workloads]]")
    toml.write_text(text[:cut] + f'[[smoke_workloads]]\nname = "{TINY_WORKLOAD}"\naxes = {{ B = 2, M = 64, N = 192 }}\n')
    return root


@pytest.fixture
def guidance_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "guidance" / "muon_orthogonalize"
    shutil.copytree(REPO / "guidance" / "muon_orthogonalize", dest)
    return dest


@pytest.fixture(autouse=True)
def no_process_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that fails while a runner, a campaign or an agent process it started still runs must not leave
    it behind (it would run on after pytest deletes its folder): once a test that used tmp_path ends,
    every process whose command line or environment names that folder is killed."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    folder = str(request.getfixturevalue("tmp_path")).encode()  # the test asks for it anyway
    yield
    spared = {os.getpid(), os.getppid()}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            pid = int(proc.name)
            if pid not in spared and any(folder in (proc / name).read_bytes() for name in ("cmdline", "environ")):
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):  # gone meanwhile, or not ours to read
            continue


# Kernels in test modules run under the Triton interpreter on this CPU-only machine.
if not __import__("torch").cuda.is_available():
    __import__("os").environ.setdefault("TRITON_INTERPRET", "1")


def _share_the_cores_among_workers() -> None:
    """Under pytest-xdist, each worker's torch gets its share of the cores, not all of them: four workers on two
    cores with two OpenMP threads each spin against each other (a 21 s law-check test took 270 s in the suite).
    The harness's own processes already run on one thread (workbench/harness/checker/launch.py)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        threads = max(1, (os.cpu_count() or 1) // workers)
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        __import__("torch").set_num_threads(threads)


_share_the_cores_among_workers()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What exists once the tests are collected (torch, Triton, Textual, the project, every test module and item:
    some 310,000 objects) lives as long as the worker: frozen out of the garbage collector's reach, as the
    workbench (workbench/tui/collector.py) and the solution process (harness/solution/host.py) do for their own
    start-up heaps. Otherwise every full collection in every test walks it all again: 0.16 s each on a 2-core
    machine, against microseconds frozen (three in-process CLI test files: 22.1 s of CPU before, 18.1-20.8 s)."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first (in their collected order), then the rest: with `--dist load` the workers take the
    long evaluations early and the many short tests fill the end, instead of a 3-minute test starting last."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def interpreter_fixed() -> Iterator[None]:
    """The solution process's interpreter patches (compile for sm_90, bounds checks, libdevice, ...),
    installed in this process for the test and removed after it (tests that run under TRITON_INTERPRET=1)."""
    from workbench.harness.solution import interpreter_fix

    uninstall = interpreter_fix.install()
    try:
        yield
    finally:
        uninstall()
