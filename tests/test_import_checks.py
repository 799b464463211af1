"""Imported tasks checked more strictly than the peer checks them, and checked without a GPU: the inputs widened
over the operator's domain (a copy kernel refused on an imported activation that the peer's torch.rand inputs
cannot tell from a ReLU; a logarithm kept positive, and said so), `import check` (every imported reference on
its smoke workloads, on the CPU) and `import battery` (generic wrong answers held to the harness's comparison)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from workbench.catalog import Catalog
from workbench.catalog.imported import load_record
from workbench.cli import app
from workbench.harness.probe.peer_domain import widen
from workbench.harness.probe.task_check import _labels
from workbench.importer.packs import kernelbench_problems
from workbench.importer.run import ImportOptions, ImportSummary, import_pack

PACKS = Path(__file__).parent / "fixtures" / "peer_packs"
SOLUTIONS = PACKS / "solutions"
PICK = ("level1/24_ReLU_rand.py", "level1/25_Log_positive.py", "level1/20_Hinge_tuple_shape.py")


def test_widening_is_seeded_and_keeps_what_each_level_promises() -> None:
    peer = torch.rand(64, 512)
    wide = widen(peer.clone(), "wide", 7, "x")
    assert torch.equal(wide, widen(peer.clone(), "wide", 7, "x")) and not torch.equal(wide, widen(peer.clone(), "wide", 8, "x"))
    assert (wide < 0).any() and (wide > 1).any() and (wide == 0).any() and (wide == 1).any() and (wide == -1).any()
    signed = widen(peer.clone(), "signed", 7, "x")
    assert (signed < 0).any() and (signed.abs() > 1).any() and torch.equal(signed.abs() / peer, (signed.abs() / peer).round())
    scaled = widen(peer.clone(), "scaled", 7, "x")
    assert (scaled >= 0).all() and (scaled > 1).any()
    assert torch.equal(widen(peer.clone(), "peer", 7, "x"), peer)
    upper = torch.triu(torch.rand(32, 32))  # structure a problem may exploit survives every level
    assert torch.equal(widen(upper.clone(), "wide", 7, "a"), torch.triu(widen(upper.clone(), "wide", 7, "a")))
    symmetric = upper + upper.T
    both = widen(symmetric.clone(), "wide", 7, "s")
    assert torch.equal(both, both.T) and (both < 0).any()
    labels = torch.randint(0, 4, (16,))
    assert widen(labels.clone(), "wide", 7, "y").equal(labels)  # integers (indices, labels) as drawn
    with pytest.raises(ValueError, match="unknown input domain"):
        widen(peer.clone(), "huge", 7, "x")


def test_check_and_battery_refuse_a_folder_that_is_not_an_import(tmp_path: Path) -> None:
    for command in ("check", "battery"):
        missing = CliRunner().invoke(app, ["import", command, str(tmp_path / "nowhere")])
        assert missing.exit_code == 2 and "no such folder" in missing.output
    empty = CliRunner().invoke(app, ["import", "battery", str(tmp_path)])
    assert empty.exit_code == 2 and "no imported tasks" in empty.output


def test_labels_keep_their_set_and_other_values_are_widened() -> None:
    signs = torch.randint(0, 2, (64,)).float() * 2 - 1
    assert _labels(signs) == "holds the values -1, 1 only (labels, signs or a mask): their set is the problem's"
    assert _labels(torch.zeros(64)) == "holds the single value 0: nothing to widen"
    assert _labels(torch.full((64,), 1.15e9)) is None  # a constant of another kind (GPU MODE's sort data, rounded)
    assert _labels(torch.rand(64)) is None


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> ImportSummary:
    into = tmp_path_factory.mktemp("checks")
    problems = [p for p in kernelbench_problems(PACKS / "kernelbench") if p.name in PICK]
    summary = import_pack("kernelbench", PACKS / "kernelbench", problems, ImportOptions(into=into, timeout_s=60))
    assert all(o.imported for o in summary.outcomes), [o.detail for o in summary.outcomes]
    return summary


@pytest.mark.slow
def test_the_domain_each_input_covers_is_tried_and_said(imported: ImportSummary) -> None:
    cat = Catalog(imported.into, imported.into / "g")
    relu = cat.task("kb_l1_24_relu_rand")
    assert load_record(relu.dir).domain == {"x": "wide"}  # type: ignore[union-attr]
    log = cat.task("kb_l1_25_log_positive")
    assert load_record(log.dir).domain == {"x": "scaled"}  # type: ignore[union-attr]
    text = log.description_text()
    assert re.search(r"`x` \| the peer's signs; .*wide: the reference gives non-finite outputs", text)
    hinge = load_record(cat.task("kb_l1_20_hinge_tuple_shape").dir)
    assert hinge is not None and hinge.domain == {"predictions": "wide", "targets": "peer"}  # labels: -1 and 1
    assert "holds the values -1, 1 only" in cat.task("kb_l1_20_hinge_tuple_shape").description_text()


@pytest.mark.slow
def test_a_copy_kernel_is_refused_on_an_imported_activation(imported: ImportSummary, tmp_path: Path) -> None:
    """On the peer's values (torch.rand, [0, 1)) a copy is a ReLU; on the imported task's it is not."""
    from workbench.harness.host.evaluate import evaluate

    relu = Catalog(imported.into, imported.into / "g").task("kb_l1_24_relu_rand")
    assert evaluate(relu, SOLUTIONS / "relu_triton.py", "cpu").status == "passed"
    copy = evaluate(relu, SOLUTIONS / "copy_triton.py", "cpu")
    assert copy.status == "incorrect_numerical", copy.message
    peer_only = tmp_path / "peer"
    shutil.copytree(relu.dir, peer_only / relu.id)
    inputs = peer_only / relu.id / "inputs.py"
    inputs.write_text(inputs.read_text().replace("DOMAIN = {'x': 'wide'}", "DOMAIN = {'x': 'peer'}"))
    as_peer = Catalog(peer_only, tmp_path / "g").task(relu.id)
    assert evaluate(as_peer, SOLUTIONS / "copy_triton.py", "cpu").status == "passed"  # what the peer's inputs allow


@pytest.mark.slow
def test_import_check_runs_every_reference_on_the_cpu(imported: ImportSummary, tmp_path: Path) -> None:
    report = tmp_path / "check.json"
    done = CliRunner().invoke(app, ["import", "check", str(imported.into), "--json", str(report)], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "3 smoke workloads ran, 0 failed, over 3 tasks" in done.output
    rows = json.loads(report.read_text())["rows"]
    assert {r["task"] for r in rows} == {"kb_l1_20_hinge_tuple_shape", "kb_l1_24_relu_rand", "kb_l1_25_log_positive"}
    assert all(r["status"] == "ran" and r["reference_s"] >= 0 for r in rows)
    broken = tmp_path / "broken"
    shutil.copytree(imported.into / "kb_l1_24_relu_rand", broken / "kb_l1_24_relu_rand")
    reference = broken / "kb_l1_24_relu_rand" / "reference.py"
    reference.write_text(
        reference.read_text().replace("def reference(x):", "def reference(x):\n    raise RuntimeError('no kernel')", 1)
    )
    failed = CliRunner().invoke(app, ["import", "check", str(broken)], env={"COLUMNS": "200"})
    assert failed.exit_code == 1 and "failed" in failed.output and "RuntimeError: no kernel" in failed.output


@pytest.mark.slow
def test_the_battery_counts_what_each_check_accepts(imported: ImportSummary, tmp_path: Path) -> None:
    out, table = tmp_path / "battery.json", tmp_path / "battery.md"
    done = CliRunner().invoke(
        app, ["import", "battery", str(imported.into), "--out", str(out), "--markdown", str(table)], env={"COLUMNS": "200"}
    )
    assert done.exit_code == 0, done.output
    data = json.loads(out.read_text())
    relu = next(t for t in data["tasks"] if t["task"] == "kb_l1_24_relu_rand")
    answers = {a["answer"]: a for a in relu["answers"]}
    assert answers["copy"]["wrong"] and not answers["copy"]["accepted"] and answers["copy"]["peer_accepts"]
    assert not answers["relu"]["wrong"]  # a ReLU on a ReLU task is right: not counted
    (row,) = data["rows"]
    assert row["group"] == "KernelBench level 1" and row["tasks"] == 3 and row["accepted"] == 0 and row["peer_accepts"] >= 1
    assert table.read_text().startswith("| pack | tasks | wrong answers tried | accepted here |")
