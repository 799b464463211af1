"""The Timeline behind live view and replay: stepping, seeking and following give the state of a prefix."""

from __future__ import annotations

from workbench.session.eventlog import read_log
from workbench.session.state import SessionState
from workbench.tui.timeline import Timeline

from .conftest import EXAMPLE


def test_every_position_equals_the_state_of_that_prefix() -> None:
    events = read_log(EXAMPLE / "events.jsonl").events
    timeline = Timeline()
    timeline.extend(events)
    for position in [0, 5, len(events), 3, 12, 1, len(events) - 1]:
        timeline.seek(position)
        expected = SessionState.from_events(events[:position])
        assert timeline.position == position
        assert [(r.rev, r.eval_state, r.status) for r in timeline.state.ordered()] == [
            (r.rev, r.eval_state, r.status) for r in expected.ordered()
        ]
        assert timeline.waiting == len(events) - position


def test_steps_clamp_and_new_events_wait_until_applied() -> None:
    events = read_log(EXAMPLE / "events.jsonl").events
    timeline = Timeline()
    assert not timeline.step(-1) and timeline.at_end
    timeline.extend(events[:10])
    assert timeline.to_end() and timeline.position == 10
    timeline.extend(events[10:])
    assert timeline.waiting == len(events) - 10 and timeline.state.submission is None
    timeline.to_end()
    recorded = SessionState.from_events(events).submission
    assert recorded is not None and recorded.rev is not None
    assert timeline.state.submission is not None and timeline.state.submission.rev == recorded.rev
    assert not timeline.step(1)


def test_revision_steps_stop_where_each_evaluation_ended_and_the_submission_is_known_from_the_start() -> None:
    events = read_log(EXAMPLE / "events.jsonl").events
    recorded = SessionState.from_events(events)
    timeline = Timeline()
    timeline.extend(events)
    assert timeline.revision_count == len(recorded.revisions)
    assert timeline.submission is not None and recorded.submission is not None
    assert timeline.submission.rev == recorded.submission.rev and timeline.submission_ahead  # at 0, before it
    seen = []
    while timeline.step_revision(1):
        seen.append(timeline.position)
    assert seen[-1] == len(events) and seen == sorted(seen) and len(seen) == len(recorded.revisions) + 1
    for position in seen[:-1]:  # each stop: just after an evaluation ended
        current = timeline.events[position - 1]
        assert current.type in ("eval_finished", "eval_skipped")
    assert not timeline.submission_ahead
    back = []
    while timeline.step_revision(-1):
        back.append(timeline.position)
    assert back == [*reversed(seen[:-1]), 0]
