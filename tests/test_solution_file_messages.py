"""Messages about a solution name the file that was evaluated (issue 58, item 9): a binary file gave
"(solution.py line None)", and every error said `solution.py` whatever the file was called."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench import paths
from workbench.catalog import Catalog
from workbench.cli import app

TINY_WORKLOAD = "smoke_tiny"  # the tiny_tasks fixture's only workload (tests/conftest.py)

TASK = "muon_orthogonalize"


def run_eval(tiny_tasks: Path, solution: Path) -> tuple[int, str, str]:
    args = ["eval", TASK, str(solution), "--device", "cpu", "--workload", TINY_WORKLOAD, "--tasks-dir", str(tiny_tasks)]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "it holds NUL bytes"),
        ("def run(G):\n    return G  # d\u00e9j\u00e0 vu\n".encode("latin-1"), "byte 0xe9 at offset 29 is not UTF-8 text"),
    ],
    ids=["binary", "latin-1"],
)
def test_a_file_that_is_not_text_is_refused_before_evaluation(
    tiny_tasks: Path, tmp_path: Path, content: bytes, reason: str
) -> None:
    binary = tmp_path / "kernel_build.py"
    binary.write_bytes(content)
    code, out, err = run_eval(tiny_tasks, binary)
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line == f"error: {binary} is not a Python source file: {reason}" + (" (a binary file?)" if "NUL" in reason else "")
    assert "None" not in err and "solution.py" not in err


@pytest.mark.parametrize(
    ("name", "source", "said"),
    [
        (
            "my_kernel.py",
            "import torch\n\ndef run(G, steps):\n    return G +\n",
            "SyntaxError: invalid syntax (my_kernel.py line 4)",
        ),
        pytest.param(
            "attempt_3.py",
            'import torch\n\n\ndef run(G, steps):\n    raise ValueError("not yet")\n',
            "runtime_error: ValueError: not yet (attempt_3.py line 5)",
            marks=pytest.mark.slow,  # the sandboxed solution process starts (the syntax error is found before)
        ),
    ],
    ids=["syntax-error", "exception"],
)
def test_an_error_names_the_file_evaluated_and_its_line(
    tiny_tasks: Path, tmp_path: Path, name: str, source: str, said: str
) -> None:
    solution = tmp_path / name
    solution.write_text(source)
    code, out, _ = run_eval(tiny_tasks, solution)
    assert code == 1
    assert said in out and "solution.py" not in out


def test_the_harness_never_says_line_none(tiny_tasks: Path, tmp_path: Path) -> None:
    """A session's revision can be any bytes (an agent wrote it): the harness itself words a file Python
    cannot parse without a line it does not have."""
    from workbench.harness.host.evaluate import evaluate

    binary = tmp_path / "kernel_v2.py"
    binary.write_bytes(b"def run(G, steps):\n    return G\x00\n")
    task = Catalog(tiny_tasks, paths.REPO_ROOT / "guidance").task(TASK)
    report = evaluate(task, binary, "cpu", [TINY_WORKLOAD])
    assert report.status == "compile_error"
    assert "null bytes (kernel_v2.py)" in report.message and "None" not in report.message, report.message
