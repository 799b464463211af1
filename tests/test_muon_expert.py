"""The expert solution: correct on the CPU smoke workloads, and the rubric points at its real code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("muon_orthogonalize")


@pytest.mark.slow
def test_expert_passes_every_smoke_workload_on_cpu() -> None:
    report = evaluate(TASK, TASK.file("expert.py"), "cpu")
    assert report.status == "passed", report.message
    assert len(report.workloads) == len(TASK.spec.smoke_workloads)
    assert report.violations == []


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
