"""The design judge: the canonical text of model_design.json (sorted keys, two-space indent), exact-quote
citations into it, no expert code in its prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.judge import NothingToJudge, judge_session
from workbench.judge.sessions import judge_input, resolve_target, task_material
from workbench.judge.testing import ScriptedJudge, cite, judge_reply, level
from workbench.session.events import DriverFinished, SessionFinished
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore
from workbench.session.testing import write_events

from .helpers import DESIGN, L1, L2, L3, make_design_session


def design_reply(text: str, l1_citation: dict[str, object] | None = None) -> str:
    citation = l1_citation or cite(text, '"change": "Carry R and Q.",', 1, "L1.c.square_side", file="model_design.json")
    return judge_reply(
        L1=level(60, "Square-side composition is proposed.", realized=[L1[0]], missing=L1[1:], citations=[citation]),
        L2=level(0, "No dataflow stage.", missing=L2),
        L3=level(20, "Triangles.", partial=[L3[0]], missing=L3[1:],
                 citations=[cite(text, '"mechanism": "Compute one triangle.",', 1, L3[0], file="model_design.json")]),
    )  # fmt: skip


def test_a_design_is_judged_on_its_canonical_text(store: SessionStore, design_session: SessionRef, catalog: Catalog) -> None:
    view = store.load(design_session)
    target = resolve_target(store, view)
    assert target.kind == "design" and target.rev == 2 and target.file == "model_design.json"
    assert target.text == json.dumps(DESIGN, sort_keys=True, indent=2) + "\n"
    material = task_material(catalog, view.config.task)
    prompt = judge_input(target, material)
    assert material.expert_source is not None
    assert "def _segment" not in prompt.user and "Expert evidence" not in prompt.user and "<expert" not in prompt.user
    assert '<design file="model_design.json" revision="2">' in prompt.user
    assert "| {" in prompt.user and '"adoption_checks": [' in prompt.user
    text = target.text
    brackets = cite(text, "],", 1, "L1.c.square_side", file="model_design.json")
    judge = ScriptedJudge([design_reply(text, brackets), design_reply(text)])
    verdict = judge_session(store, design_session, catalog, judge).verdict
    assert verdict.kind == "design" and verdict.complete and verdict.js == pytest.approx(80 / 3)
    assert "hold no design content (only brackets, commas or blank lines)" in verdict.reasks[0].errors[0]
    assert verdict.revision_status is None and verdict.file == "model_design.json"


def test_a_design_session_without_a_design_has_nothing_to_judge(root, store: SessionStore, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    empty = make_design_session(root, "20261201-070600-muon_orthogonalize-e0e0", with_design=False)
    with pytest.raises(NothingToJudge, match="has no design"):  # not ended: it may still write one
        judge_session(store, empty, catalog, ScriptedJudge([]))


def test_a_design_session_that_ended_without_a_design_is_a_failed_attempt(
    root: Path, store: SessionStore, catalog: Catalog
) -> None:
    # issue 58, item 1: a failed attempt is a result (0, recorded, no model call), not "nothing to judge"
    empty = make_design_session(root, "20261201-070600-muon_orthogonalize-e0e1", with_design=False)
    write_events(empty, [DriverFinished(driver="agent", reason="the agent ended its turn", outcome="completed"),
                         SessionFinished(reason="the agent ended its turn")])  # fmt: skip
    judge = ScriptedJudge([])
    verdict = judge_session(store, empty, catalog, lambda: judge).verdict
    assert verdict.kind == "design" and verdict.model_called is False and verdict.js == 0.0 and verdict.rev == 1
    assert "ended without a design" in verdict.note and judge.conversations == []
