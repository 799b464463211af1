"""The verdict and review dict shapes, and the effective score of each level."""

from __future__ import annotations

import pytest

from workbench.scoring.testing import review, verdict
from workbench.scoring.verdicts import BadVerdict, effective_levels, js, parse_review, parse_verdict, zero_levels


def test_js_is_the_mean_of_three_valid_levels() -> None:
    assert js({"L1": 60.0, "L2": 70.0, "L3": 80.0}) == pytest.approx(70.0)
    assert js({"L1": 60.0, "L2": None, "L3": 80.0}) is None  # one invalid level: no JS
    assert js({"L1": 60.0, "L2": 70.0}) is None
    assert js(zero_levels()) == 0.0


def test_effective_scores_reviews_override_the_judge() -> None:
    judged = parse_verdict(verdict(60, 70, 80))
    assert effective_levels(judged, []) == {"L1": 60.0, "L2": 70.0, "L3": 80.0}
    edits = [parse_review(review("L3", 50)), parse_review(review("L1", 65)), parse_review(review("L3", 55))]
    # the latest review of a level wins (L3: 55, not 50); L2 keeps the judge's score
    levels = effective_levels(judged, edits)
    assert levels == {"L1": 65.0, "L2": 70.0, "L3": 55.0}
    assert js(levels) == pytest.approx((65 + 70 + 55) / 3)


def test_an_invalid_level_has_no_score_until_reviewed() -> None:
    judged = parse_verdict(verdict(50, None, 40))
    assert judged.levels["L2"].valid is False
    assert effective_levels(judged, []) == {"L1": 50.0, "L2": None, "L3": 40.0}
    assert effective_levels(judged, [parse_review(review("L2", 30))])["L2"] == 30.0
    # a score given but marked invalid is not used
    data = verdict(50, 60, 40)
    data["levels"]["L1"]["valid"] = False
    assert effective_levels(parse_verdict(data), [])["L1"] is None


def test_reviews_of_another_kind_are_ignored() -> None:
    judged = parse_verdict(verdict(10, 20, 30, kind="design"))
    edit = review("L1", 90)
    edit["kind"] = "impl"
    assert effective_levels(judged, [parse_review(edit)])["L1"] == 10.0


def test_malformed_dicts_are_refused_with_the_field() -> None:
    with pytest.raises(BadVerdict, match="levels"):
        parse_verdict({"kind": "impl"})
    with pytest.raises(BadVerdict, match=r"levels\.L1\.score"):
        parse_verdict({"levels": {"L1": {"score": 140}}})
    with pytest.raises(BadVerdict, match="kind"):
        parse_verdict({"kind": "vibes", "levels": {}})
    with pytest.raises(BadVerdict, match="level"):
        parse_review({"score": 3, "author": "a", "reason": "r"})
    extra = verdict(1, 2, 3)
    extra["anything_else"] = {"kept": True}  # extra keys are allowed
    assert parse_verdict(extra).levels["L3"].score == 3.0
