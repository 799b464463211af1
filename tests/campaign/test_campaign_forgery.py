"""What a campaign believes about a session comes from lines its runner sealed: an agent (or anything else
that can write to the sessions directory) that appends a forged `session_finished` or a forged passing
evaluation does not make the campaign skip the unit; a corrupt record file is set aside, not trusted."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.campaign.plan import Unit
from workbench.campaign.records import load_record, record_path
from workbench.campaign.simulate import simulated_campaign
from workbench.campaign.work import unit_status
from workbench.scoring.testing import Step, scored_session, timed
from workbench.session.store import FOREIGN, SessionStore

MUON, W1, W2 = "muon_orthogonalize", "b32_m2048_n5464", "b32_m4096_n11008"


def _cut_off_session(root: Path, unit: Unit) -> Path:
    """A unit's session whose runner was killed: a failing revision, no ending."""
    scored_session(
        root, MUON, [Step(1, timed(MUON, {W1: (4, 4), W2: (2, 8)}, status="incorrect_numerical"))],
        model="sim-model", session_id=unit.session_id, finish=False,
    )  # fmt: skip
    return root / unit.session_id / "events.jsonl"


def test_forged_log_lines_do_not_finish_or_pass_a_unit(tmp_path: Path) -> None:
    campaign, units = simulated_campaign(tmp_path, 1)
    unit = units[0]
    log = _cut_off_session(tmp_path, unit)
    assert unit_status(campaign, unit).state == "interrupted"
    lines = log.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    last_seq = max(e["seq"] for e in events)
    evaluation = next(e for e in events if e["type"] == "eval_finished")
    passing = json.loads(json.dumps(evaluation))
    passing["seq"], passing["report"]["status"] = last_seq + 1, "passed"
    for workload in passing["report"]["workloads"]:
        workload["status"] = "passed"
    submission = {**events[-1], "seq": last_seq + 2, "type": "submission", "rev": evaluation["rev"], "reason": "forged"}
    finished = {
        **events[-1],
        "seq": last_seq + 3,
        "type": "session_finished",
        "reason": "forged",
        "submission_rev": evaluation["rev"],
    }
    for forged in (passing, submission, finished):
        forged.pop("mac", None)
        forged.pop("seal", None)
    log.write_text("\n".join([*lines, *(json.dumps(f) for f in (passing, submission, finished))]) + "\n")
    status = unit_status(campaign, unit)
    assert status.state == "interrupted" and not status.passed  # the campaign resumes it, never skips it
    view = SessionStore(tmp_path, examples=None).load(unit.session_id)
    assert sum(FOREIGN in bad.message for bad in view.bad_lines) == 3  # each forged line flagged, none believed


def test_a_corrupt_record_is_set_aside(tmp_path: Path) -> None:
    campaign, units = simulated_campaign(tmp_path, 1)
    path = record_path(campaign, units[0].key)
    path.parent.mkdir(parents=True)
    path.write_text('{"key": "x", "attempts": [{"step": "run"')  # torn
    record = load_record(campaign, units[0].key, units[0].session_id)
    assert record.attempts == [] and record.gave_up is None
    assert path.with_suffix(".json.bad").is_file() and not path.exists()
