"""The expert solution: correct on the CPU smoke workloads, and the rubric points at its real code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("muon_orthogonalize")


@pytest.mark.slow
def test_expert_passes_the_smoke_workloads_on_cpu(interpreter_fixed: None) -> None:
    """The first smoke workload through the real harness; the second (four times the work: about 6 s a call
    under the interpreter, which the harness would make four times) in process, once, against the task's rule."""
    first, second = TASK.spec.smoke_workloads[0], TASK.spec.smoke_workloads[1]
    report = evaluate(TASK, TASK.file("expert.py"), "cpu", [first.name])
    assert report.status == "passed", report.message
    assert report.violations == []

    reference = import_file(TASK.file("reference.py"), "_test_muon_expert_reference")
    expert = import_file(TASK.file("expert.py"), "_test_muon_expert_expert")
    made = import_file(TASK.file("inputs.py"), "_test_muon_expert_inputs").make_inputs(second.axes, 17, "cpu")
    rule = TASK.tolerance_for(second)
    got = expert.run(**made)
    want = getattr(reference, rule.oracle)(**made)
    verdict = compare(got, want, rule, reference.reference(**made) if rule.reference_error_factor else None)
    assert verdict.ok, verdict.message


def test_rubric_evidence_names_code_that_exists_in_the_expert() -> None:
    rubric = CATALOG.rubric("muon_orthogonalize")
    assert rubric is not None
    source = TASK.file("expert.py").read_text()
    functions = set(re.findall(r"^def\s+(\w+)", source, re.M))
    for criterion in rubric.criteria:
        cited = re.findall(r"`([^`]+)`", criterion.expert_evidence)
        assert any(c in functions for c in cited), f"{criterion.id} names no function of expert.py"
        for code in cited:
            # every cited name or expression must appear in the expert's source (modulo spacing)
            assert code.split("(")[0] in source, f"{criterion.id} cites {code!r}, which expert.py does not contain"
