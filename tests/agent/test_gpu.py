"""The agent's GPU-only tools on a CUDA machine: benchmark (latency and speedup from the revision's
evaluation) and profile (the sandboxed torch.profiler run with Triton's compiled metadata)."""

from __future__ import annotations

import pytest
import torch

from workbench.agent.testing import MUON_NAIVE, ScriptedProvider, call, turn
from workbench.session.events import EvalFinished, ToolCall, ToolResult
from workbench.session.store import SessionStore

from .helpers import agent_session, of, run_agent

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
WORKLOAD = "b32_m2048_n5464"


def test_benchmark_and_profile_report_the_gpu_figures(store: SessionStore) -> None:
    ref = agent_session(store, device="cuda", workloads=[WORKLOAD])
    provider = ScriptedProvider(
        [
            turn(call("write_file", path="solution.py", content=MUON_NAIVE.read_text())),
            turn(call("benchmark")),
            turn(call("profile", workload=WORKLOAD), call("profile", workload="b1_nowhere")),
            turn(call("run_tests"), call("submit")),
        ]
    )
    result = run_agent(store, ref, provider, harness=True)
    events = store.load(ref).events
    names = {(c.turn, c.call_id): c.name for c in of(events, ToolCall)}
    results = [(names[(r.turn, r.call_id)], r) for r in of(events, ToolResult)]
    for name, r in results:
        print(f"--- {name} ok={r.ok}\n{r.content}")
    (_, benchmark), (_, profile), (_, unknown), (_, tests), _ = results[1:]
    report = next(e.report for e in of(events, EvalFinished) if e.rev == 2)
    assert report.passed, report.message
    assert benchmark.ok and benchmark.content.startswith("revision 2 (")
    assert f"  {WORKLOAD}: " in benchmark.content and " ms (min " in benchmark.content and "speedup" in benchmark.content
    assert "geometric-mean speedup over all workloads" in benchmark.content
    assert profile.ok, profile.content
    assert profile.content.startswith(f"profile of revision 2 (solution.py) on {WORKLOAD}")
    assert "kernels by device time" in profile.content and "us," in profile.content
    assert " registers, " in profile.content and " spills, " in profile.content and " B shared" in profile.content
    assert "sandbox: " in profile.content
    assert not unknown.ok and "unknown workload 'b1_nowhere'" in unknown.content
    assert tests.ok and "benchmark shows its latency and speedup" in tests.content
    assert result.submission_rev == 2
