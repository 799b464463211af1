"""Campaign progress: one rule for "done" (run, status and the TUI), spend that says n/a when a model has no
price, and a remaining-time estimate that counts down between jobs' ends (issue 29)."""

from __future__ import annotations

import pytest

from workbench.campaign.scheduler import Snapshot
from workbench.campaign.status import is_done, spend_of, usd
from workbench.campaign.work import UnitStatus


@pytest.mark.parametrize(
    ("state", "judged", "done"),
    [
        ("finished", False, True),
        ("finished", True, False),  # a campaign with a judge: done once judged
        ("judged", True, True),
        ("running", False, False),
        ("failed", False, False),
        ("gave_up", True, False),
    ],
)
def test_one_rule_for_done(state: str, judged: bool, done: bool) -> None:
    assert is_done(state, judged) is done


def test_spend_is_not_available_when_a_model_has_no_price() -> None:
    priced = UnitStatus("finished", "a", cost_usd=0.25, turns=3)
    unpriced = UnitStatus("finished", "b", cost_usd=None, turns=2)
    not_started = UnitStatus("pending", "c")
    assert spend_of([priced, not_started]) == pytest.approx(0.25)
    assert spend_of([priced, unpriced]) is None
    assert usd(None) == "n/a (unpriced model)" and usd(0.25) == "$0.2500"


def test_the_remaining_estimate_counts_down_while_jobs_run() -> None:
    snapshot = Snapshot(total=4, running=2, queued=1, slots=2, job_seconds=[100.0], running_since=[1000.0, 1000.0])
    assert snapshot.remaining_s(now=1000.0) == pytest.approx(150.0)  # 3 jobs x 100 s over 2 slots
    assert snapshot.remaining_s(now=1060.0) == pytest.approx(90.0)  # the two running ones are 60 s in
    assert snapshot.remaining_s(now=1500.0) == pytest.approx(50.0)  # overdue jobs count as nearly done, never less
    assert Snapshot(total=1).remaining_s() is None  # nothing ended yet: no estimate
