"""Judge scores as scoring reads them: JS, and the effective score of a level (the judge's one rule,
workbench.judge.scores) over verdict and review events written in the judge's shape."""

from __future__ import annotations

import pytest

from workbench.judge.scores import effective_scores, judgements
from workbench.scoring.testing import review, verdict
from workbench.scoring.verdicts import js, zero_levels
from workbench.session.events import Event, JudgeVerdict, Review


def events(*items: tuple[int, str, dict[str, object]]) -> list[Event]:
    made: list[Event] = []
    for seq, (rev, what, data) in enumerate(items, start=1):
        made.append(JudgeVerdict(seq=seq, rev=rev, verdict=data) if what == "verdict" else Review(seq=seq, rev=rev, review=data))
    return made


def test_js_is_the_mean_of_three_valid_levels() -> None:
    assert js({"L1": 60.0, "L2": 70.0, "L3": 80.0}) == pytest.approx(70.0)
    assert js({"L1": 60.0, "L2": None, "L3": 80.0}) is None  # one invalid level: no JS
    assert js({"L1": 60.0, "L2": 70.0}) is None
    assert js(zero_levels()) == 0.0


def test_effective_scores_reviews_override_the_judge() -> None:
    assert effective_scores(events((2, "verdict", verdict(60, 70, 80)))) == {2: {"L1": 60.0, "L2": 70.0, "L3": 80.0}}
    log = events(
        (2, "verdict", verdict(60, 70, 80)),
        (2, "review", review("L3", 50)),
        (2, "review", review("L1", 65)),
        (2, "review", review("L3", 55)),
    )
    levels = effective_scores(log)[2]
    assert levels == {"L1": 65.0, "L2": 70.0, "L3": 55.0}  # the latest review of a level wins; L2 keeps the judge's
    assert js(levels) == pytest.approx((65 + 70 + 55) / 3)


def test_an_invalid_level_has_no_score_until_reviewed() -> None:
    assert effective_scores(events((1, "verdict", verdict(50, None, 40))))[1] == {"L1": 50.0, "L2": None, "L3": 40.0}
    reviewed = events((1, "verdict", verdict(50, None, 40)), (1, "review", review("L2", 30)))
    assert effective_scores(reviewed)[1]["L2"] == 30.0


def test_reviews_of_another_kind_are_kept_apart() -> None:
    log = events((1, "verdict", verdict(10, 20, 30, kind="design")), (1, "review", review("L1", 90, kind="impl")))
    assert effective_scores(log, kind="design")[1]["L1"] == 10.0


def test_malformed_dicts_are_skipped_with_the_reason() -> None:
    found = judgements(events((1, "verdict", {"kind": "impl"}), (1, "review", {"score": 3})))
    assert not found and len(found.skipped) == 2
