"""`session compare` (issue 58, item 4): sessions of different tasks are refused in one line unless asked for;
the plot names a session it cannot draw and why, refuses when neither session has latencies, keeps its labels
inside the image and ticks whole revisions."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.harness.protocol.report import EvalReport
from workbench.session.compare import compare, curve_figure
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore
from workbench.session.testing import finished_session, timed_report

TASK = "muon_orthogonalize"
KERNELS = [
    "def run(G, steps):\n    return G\n",
    "def run(G, steps):\n    return G.half()\n",
    "def run(G, steps):\n    return G.float()\n",
]


def timed(rev: int) -> EvalReport:
    return timed_report(TASK, {"w1": (1.0, 1.5 * rev)}, device="cuda")


def untimed(rev: int) -> EvalReport:
    """A CPU evaluation: passed, no latencies."""
    report = timed_report(TASK, {"w1": (1.0, 1.0)}, device="cpu")
    return report.model_copy(
        update={"workloads": [w.model_copy(update={"latency": None, "reference": None}) for w in report.workloads]}
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


def run(root: Path, *args: str):  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(app, ["session", "compare", *args, "--sessions-dir", str(root)])
    assert "Traceback" not in result.output, result.output
    return result


def test_sessions_of_different_tasks_are_refused_in_one_line_unless_asked_for(root: Path) -> None:
    muon = finished_session(root, TASK, KERNELS[:2], timed)
    other = finished_session(root, "splitk_gemm", ["def run(A, B):\n    return A @ B\n"], lambda rev: None)
    refused = run(root, muon.id, other.id)
    assert refused.exit_code == 2 and refused.stdout == ""
    [line] = refused.stderr.strip().splitlines()
    assert "a muon_orthogonalize session" in line and "a splitk_gemm session" in line and "--any-task" in line
    asked = run(root, muon.id, other.id, "--any-task")
    assert asked.exit_code == 0, asked.output
    assert "two sessions of different tasks: muon_orthogonalize vs splitk_gemm" in asked.stdout
    assert "muon_orthogonalize: two sessions" not in asked.stdout
    assert "different tasks (muon_orthogonalize, splitk_gemm): the diff is of unrelated kernels" in asked.stderr


def test_a_plot_with_nothing_to_draw_is_refused_and_nothing_is_written(root: Path, tmp_path: Path) -> None:
    a = finished_session(root, TASK, KERNELS[:2], untimed)
    b = finished_session(root, TASK, KERNELS[:2], lambda rev: untimed(rev).model_copy(update={"status": "incorrect_numerical"}))
    plot = tmp_path / "curves.png"
    result = run(root, a.id, b.id, "--plot", str(plot))
    assert result.exit_code == 2 and not plot.exists()
    [line] = result.stderr.strip().splitlines()
    assert "neither session has a timed passing revision" in line
    assert "2 passing revision(s), none timed (no latencies on cpu)" in line and "no passing revision" in line
    unwritable = run(root, a.id, b.id, "--plot", str(tmp_path / "no" / "such" / "dir.png"))
    assert unwritable.exit_code == 2


def _store_pair(root: Path) -> tuple[SessionStore, SessionRef, SessionRef]:
    timed_one = finished_session(root, TASK, KERNELS, timed)  # revisions 1-3, timed: a curve over 3 revisions
    cpu_one = finished_session(root, TASK, KERNELS[:2], untimed, device="cpu")
    return SessionStore(root, examples=None), timed_one, cpu_one


def test_an_untimed_session_is_named_as_not_drawn(root: Path, tmp_path: Path) -> None:
    store, timed_one, cpu_one = _store_pair(root)
    plot = tmp_path / "curves.png"
    result = run(root, timed_one.id, cpu_one.id, "--plot", str(plot))
    assert result.exit_code == 0, result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot: {cpu_one.id} is not drawn: 2 passing revision(s), none timed (no latencies on cpu)" in result.stderr
    figure = curve_figure(compare(store, timed_one, cpu_one))
    [axes] = figure.axes
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert len(legend) == 2 and "not drawn, 2 passing revision(s), none timed" in legend[1]


def test_the_plot_keeps_its_labels_inside_and_ticks_whole_revisions(root: Path) -> None:
    store, timed_one, cpu_one = _store_pair(root)
    figure = curve_figure(compare(store, timed_one, cpu_one))
    figure.canvas.draw()
    [axes] = figure.axes
    box = figure.bbox
    for label in (axes.yaxis.label, axes.xaxis.label, axes.title):
        extent = label.get_window_extent()
        assert extent.x0 >= 0 and extent.y0 >= 0 and extent.x1 <= box.x1 and extent.y1 <= box.y1, label.get_text()
    ticks = [t for t in axes.get_xticks() if axes.get_xlim()[0] <= t <= axes.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)  # revisions 1, 2, 3: never 1.25
