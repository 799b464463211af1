"""Effective scores (the latest review, else the judge's valid score), agreement between the judge and its
reviewers, the expert's evidence per criterion, and the verdict's shape as the scoring package reads it."""

from __future__ import annotations

import pytest

from workbench import paths
from workbench.catalog import Catalog
from workbench.judge import agreement, effective_scores, judge_session, judgements, record_review, review_pairs, spearman
from workbench.judge.evidence import criterion_evidence, definitions, evidence_names
from workbench.judge.testing import ScriptedJudge
from workbench.session.events import Review
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore

from .helpers import paraphrased, reply


def test_spearman_with_ties_and_degenerate_inputs() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties get the mean rank: ranks x = 1, 2.5, 2.5, 4; y = 1, 2, 3, 4 -> 0.9487
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)
    assert spearman([1], [1]) is None and spearman([1, 1], [2, 3]) is None


def test_effective_scores_take_the_latest_review_else_the_judges_valid_score(
    store: SessionStore, session: SessionRef, catalog: Catalog
) -> None:
    judge_session(store, session, catalog, ScriptedJudge([reply(L3=paraphrased())] * 3))  # L3 invalid
    judge_session(store, session, catalog, ScriptedJudge([]), rev=1)  # the failing template: zeros
    assert effective_scores(store.load(session)) == {
        1: {"L1": 0.0, "L2": 0.0, "L3": 0.0},
        2: {"L1": 10.0, "L2": 40.0, "L3": None},
    }
    record_review(store, session, "L3", score=25, reason="the tl.dot is there", author="ann", rev=2)
    record_review(store, session, "L2", score=35, reason="dense", author="bob", rev=2)
    record_review(store, session, "L2", reason="on second thought, the judge was right", author="bob", rev=2)  # confirm
    view = store.load(session)
    assert effective_scores(view)[2] == {"L1": 10.0, "L2": 40.0, "L3": 25.0}
    assert effective_scores(view.events, kind="design") == {}
    judgement = judgements(view)[("impl", 2)]
    assert judgement.js == pytest.approx(25.0) and judgement.judge_score("L3") is None
    reviews = [e.review for e in view.events if isinstance(e, Review)]
    assert reviews[0]["original_score"] is None and reviews[0]["action"] == "change"
    assert reviews[2] == {**reviews[2], "action": "confirm", "score": 40.0, "previous_score": 35.0, "original_score": 40.0}
    # a review of an invalid level makes no agreement pair; L2's latest review (a confirmation) makes one
    pairs = review_pairs(session.id, view)
    assert [(p.level, p.judge, p.reviewer) for p in pairs] == [("L2", 40.0, 40.0)]
    rows = {row.level: row for row in agreement(pairs)}
    assert rows["L2"].count == 1 and rows["L2"].mean_abs_diff == 0.0 and rows["all"].count == 1 and rows["L1"].count == 0


def test_the_scoring_package_reads_the_verdicts_and_reviews(store: SessionStore, session: SessionRef, catalog: Catalog) -> None:
    from workbench.scoring.collect import read_session

    judge_session(store, session, catalog, ScriptedJudge([reply(L3=paraphrased())] * 3))
    record_review(store, session, "L1", score=20, reason="more", author="ann")
    events = store.load(session).events
    [judged] = [v for v in read_session(session.dir).verdicts if v.rev == 2]
    assert judged.kind == "impl" and judged.reviewed == ["L1"]
    assert judged.levels == effective_scores(events)[2] and judged.levels["L3"] is None and judged.levels["L1"] == 20


def test_each_criterion_points_at_the_expert_functions_it_names() -> None:
    catalog = Catalog(paths.REPO_ROOT / "tasks", paths.REPO_ROOT / "guidance")
    rubric = catalog.rubric("muon_orthogonalize")
    assert rubric is not None
    source = (paths.REPO_ROOT / "tasks" / "muon_orthogonalize" / "expert.py").read_text()
    evidence = criterion_evidence(rubric, source)
    assert [span.name for span in evidence["L1.c.square_side"]] == ["_segment", "square", "_launch_apply"]
    assert [span.name for span in evidence["L3.c.tensor_core_k_tail"]][:3] == ["_dot_k", "padded", "_desc"]
    assert all(evidence[c.id] for c in rubric.criteria)  # every criterion names at least one expert function
    lines = source.splitlines()
    segment = evidence["L1.c.square_side"][0]
    assert lines[segment.start_line - 1].startswith("def _segment(")
    sym = definitions(source)["_sym_kernel"]
    assert lines[sym.start_line - 1].startswith("@triton.jit")  # decorators belong to the function
    assert evidence_names("`a(b)` and `c.d` then `a` and ``") == ["a", "c"]
