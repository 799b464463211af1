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
from workbench.harness.policy.checker import check_source

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
@pytest.mark.parametrize("task_id", SUITE)
def test_the_expert_passes_every_smoke_workload_on_cpu(task_id: str) -> None:
    """The expert through the real harness on every smoke workload. The naive solutions are test helpers,
    checked in process on several shapes by tests/test_<task>.py and through the harness inside every
    red-team case built on them (tests/redteam/), so they are not evaluated here again."""
    task = CATALOG.task(task_id)
    smoke = [w.name for w in task.spec.smoke_workloads]
    report = evaluate(task, task.file("expert.py"), "cpu", smoke)
    assert report.status == "passed", report.message
    assert [w.name for w in report.workloads] == smoke
    assert report.violations == []
    sampling = task.spec.sampling
    for w in report.workloads:  # a sampler's report says how its law was tested, and nothing else is drawn
        if sampling is None:
            assert w.law_p is None and w.draws == 0
        else:
            assert w.law_level == sampling.alpha / 3 and w.law_p is not None and w.law_p >= w.law_level
            assert w.draws >= sampling.smoke_min_draws and "law p" in w.law_text()


@pytest.mark.parametrize("task_id", SUITE)
def test_the_naive_solution_and_the_template_pass_the_static_policy(task_id: str) -> None:
    """What the harness's static policy says of the honest helpers, in milliseconds: nothing."""
    assert check_source((SOLUTIONS / f"{task_id}_naive.py").read_text()) == []
    assert check_source(CATALOG.task(task_id).file("template.py").read_text()) == []
    assert check_source(CATALOG.task(task_id).file("expert.py").read_text()) == []
