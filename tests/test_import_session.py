"""An agent session on an imported task, answered by the scripted model (no API key): it writes an honest Triton
solution, run_tests passes, the submission is recorded; guided configurations are refused for such a task."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.cli.scripted_import import main as scripted_main

PACKS = Path(__file__).parent / "fixtures" / "peer_packs"


@pytest.mark.slow
def test_agent_session_on_an_imported_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    into, sessions = tmp_path / "kb", tmp_path / "sessions"
    done = CliRunner().invoke(
        app, ["import", "kernelbench", str(PACKS / "kernelbench"), "--level", "1", "--problems", "4_ReLU.py", "--into", str(into)]
    )
    assert done.exit_code == 0, done.output
    roots = ["--tasks-dir", str(into), "--guidance-dir", str(tmp_path / "guidance"), "--sessions-dir", str(sessions)]
    refused = CliRunner().invoke(app, ["session", "new", "kb_l1_4_relu", "--guidance", "L1", *roots])
    assert refused.exit_code == 2 and "imported (imported, no guidance)" in refused.output
    common = ["--provider", "openai", "--model", "scripted-import", "--allow-unpriced", "--device", "cpu", *roots]
    with pytest.raises(SystemExit) as ended:
        scripted_main([str(PACKS / "solutions" / "relu_triton.py"), "run", "kb_l1_4_relu", *common])
    out = capsys.readouterr().out
    assert ended.value.code == 0, out
    assert "passed" in out
    # the report marks the task as imported (its origin from the session's record), beside the results
    report = CliRunner().invoke(app, ["report", "--format", "md", "--tasks-dir", str(into), "--sessions-dir", str(sessions)])
    assert report.exit_code == 0, report.output
    assert "kb_l1_4_relu: imported, no guidance (KernelBench level1/4_ReLU.py" in report.output
