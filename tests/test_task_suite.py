"""What every task of the suite must hold, checked for each task that has a naive solution in tests/solutions.

Per task: the rubric cites expert code that exists; the guidance covers L1, L2 and L3; the expert and the
honest naive solution pass every smoke workload through the real harness on the CPU; the roofline gives
both floors. Task-specific checks (formulas, inputs, tolerances) live in tests/test_<task>.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
SOLUTIONS = REPO / "tests" / "solutions"
SUITE = sorted(t for t in CATALOG.task_ids() if (SOLUTIONS / f"{t}_naive.py").is_file())


def test_the_suite_holds_the_quantisation_and_normalisation_batch() -> None:
    assert {"rmsnorm_bwd", "add_rmsnorm_fp8_quant", "fp8_block_gemm", "w4a16_gemm", "qknorm_rope_cache"} <= set(SUITE)


@pytest.mark.parametrize("task_id", SUITE)
def test_rubric_evidence_names_code_that_exists_in_the_expert(task_id: str) -> None:
    rubric = CATALOG.rubric(task_id)
    guidance = CATALOG.guidance(task_id)
    assert rubric is not None and guidance is not None
    assert {i.level for i in guidance.items} == {"L1", "L2", "L3"}
    source = CATALOG.task(task_id).file("expert.py").read_text()
    functions = set(re.findall(r"^def\s+(\w+)", source, re.M))
    for criterion in rubric.criteria:
        cited = re.findall(r"`([^`]+)`", criterion.expert_evidence)
        assert any(c in functions for c in cited), f"{criterion.id} names no function of expert.py"
        for code in cited:
            assert code.split("(")[0] in source, f"{criterion.id} cites {code!r}, which expert.py does not contain"


@pytest.mark.parametrize("task_id", SUITE)
def test_roofline_states_both_floors(task_id: str) -> None:
    task = CATALOG.task(task_id)
    roof = task.spec.roofline
    assert roof.reference_bytes is not None, "the reference's dataflow bytes (reference_bytes) are missing"
    for workload in task.spec.workloads:
        reference_bytes = task.reference_bytes(workload)
        assert reference_bytes is not None and reference_bytes >= task.bytes_moved(workload) > 0
        assert task.flops(workload) >= task.min_flops(workload) > 0


@pytest.mark.slow
@pytest.mark.parametrize("solution", ["expert", "naive"])
@pytest.mark.parametrize("task_id", SUITE)
def test_solution_passes_the_smoke_workloads_on_cpu(task_id: str, solution: str) -> None:
    """The expert on every smoke workload; the naive solution (a test helper, checked in-process on several
    shapes by tests/test_<task>.py) on the first only, which keeps the suite's time in bounds."""
    task = CATALOG.task(task_id)
    smoke = [w.name for w in task.spec.smoke_workloads]
    path = task.file("expert.py") if solution == "expert" else SOLUTIONS / f"{task_id}_naive.py"
    chosen = smoke if solution == "expert" else smoke[:1]
    report = evaluate(task, path, "cpu", chosen)
    assert report.status == "passed", report.message
    assert [w.name for w in report.workloads] == chosen
    assert report.violations == []
