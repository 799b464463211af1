"""The profile tool runs the agent's solution in the same allow-list sandbox as the harness's solution
process (`sandbox.isolate`): the profile host starts there and reads its request, with nothing of the
machine bound but the system folders, the interpreter, the package's modules and the scratch folder."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from workbench.agent.profile import PREFIX, SandboxedProfiler
from workbench.catalog import Catalog
from workbench.harness.host import sandbox

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.slow  # the profile host process in the sandbox, importing torch (about 5 s on a 2-core CPU)
@pytest.mark.skipif(sandbox.status("cpu").kind != "bubblewrap", reason="bubblewrap cannot start here")
def test_the_profile_host_starts_in_the_allow_list_sandbox(tmp_path: Path) -> None:
    task = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    shutil.copyfile(REPO / "tests" / "solutions" / "muon_naive.py", scratch / "solution.py")
    shutil.copyfile(task.file("inputs.py"), scratch / "inputs.py")
    request = {"solution": str(scratch / "solution.py"), "inputs": str(scratch / "inputs.py"), "axes": {}, "seed": 1}
    (scratch / "request.json").write_text(json.dumps({**request, "order": [], "warmup": 1, "calls": 1}))
    profiler = SandboxedProfiler("cpu", tmp_path / "sessions")
    launch = profiler.command(task, scratch)
    assert launch.info.kind == "bubblewrap"
    assert "empty read-only root" in launch.info.detail
    assert str(REPO / "tasks") not in " ".join(launch.command)  # the argv names no task or mount
    output = profiler._run(launch, threading.Event())
    payloads = [json.loads(line[len(PREFIX) :]) for line in output.splitlines() if line.startswith(PREFIX)]
    # The host ran inside and read its request; with no GPU here it reports the device error as the tool's.
    assert payloads and "error" in payloads[-1], output
