"""The session event log: writer (seq, lock), tolerant reader, incremental tail, speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.harness.protocol.report import EvalReport, WorkloadResult
from workbench.llm.usage import Usage
from workbench.session.eventlog import EventWriter, LogTail, SessionLocked, read_log
from workbench.session.events import DriverOutput, EvalFinished, EvalStarted, ModelCall, Revision
from workbench.session.state import SessionState


def test_seq_starts_at_one_and_continues_after_reopen(tmp_path: Path) -> None:
    with EventWriter(tmp_path) as writer:
        writer.append(DriverOutput(stream="stdout", text="a"))
        writer.append(DriverOutput(stream="stdout", text="b"))
    with EventWriter(tmp_path) as writer:
        writer.append(DriverOutput(stream="stderr", text="c"))
    contents = read_log(tmp_path / "events.jsonl")
    assert [e.seq for e in contents.events] == [1, 2, 3]
    assert all(json.loads(line)["v"] == 1 for line in (tmp_path / "events.jsonl").read_text().splitlines())


def test_second_writer_is_refused(tmp_path: Path) -> None:
    with EventWriter(tmp_path), pytest.raises(SessionLocked, match="already being run by pid"):
        EventWriter(tmp_path)
    EventWriter(tmp_path).close()  # free again once the first closed


def test_torn_last_line_is_skipped_and_repaired_by_the_writer(tmp_path: Path) -> None:
    with EventWriter(tmp_path) as writer:
        writer.append(DriverOutput(stream="stdout", text="whole"))
    log = tmp_path / "events.jsonl"
    with log.open("ab") as handle:
        handle.write(b'{"v":1,"seq":2,"ts":1.0,"type":"driver_out')
    contents = read_log(log)
    assert contents.torn_tail and not contents.bad_lines and len(contents.events) == 1
    with EventWriter(tmp_path) as writer:
        assert writer.append(DriverOutput(stream="stdout", text="next")).seq == 2
    assert [e.seq for e in read_log(log).events] == [1, 2]


def test_bad_middle_line_is_reported_with_its_number(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    good = DriverOutput(stream="stdout", text="x", seq=1).model_dump_json()
    later = DriverOutput(stream="stdout", text="y", seq=3).model_dump_json()
    log.write_text(good + "\n" + '{"v":1,"seq":2,"type":"no_such_type"}\n' + "not json\n" + later + "\n")
    contents = read_log(log)
    assert [e.seq for e in contents.events] == [1, 3]
    assert [b.line for b in contents.bad_lines] == [2, 3]
    assert not contents.torn_tail


def test_log_tail_returns_only_whole_new_lines(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    tail = LogTail(log)
    assert tail.poll() == []
    with EventWriter(tmp_path) as writer:
        writer.append(DriverOutput(stream="stdout", text="1"))
        assert [e.seq for e in tail.poll()] == [1]
        with log.open("ab") as handle:  # half a line: not returned yet
            handle.write(b'{"v":1,')
        assert tail.poll() == []


def _report(passed: bool) -> EvalReport:
    return EvalReport(
        task="t",
        solution="s.py",
        device="cpu",
        status="passed" if passed else "incorrect_numerical",
        workloads=[WorkloadResult(name="w", status="passed" if passed else "incorrect_numerical", trials=3, rel_err=1e-3)],
    )


def test_a_350_turn_session_of_5000_events_reads_back_whole(tmp_path: Path) -> None:
    seq = 0  # built directly (the writer's fsync per line would make building slow, not reading)
    lines = []
    for turn in range(1, 351):
        batch = [
            ModelCall(turn=turn, model="m", usage=Usage(uncached_input=1000, output=200), latency_s=1.0, text="thinking " * 20)
        ]
        batch += [DriverOutput(stream="stdout", text="tool output " * 10) for _ in range(14)]
        if turn % 10 == 0:
            rev = turn // 10
            batch += [
                Revision(rev=rev, sha=f"{rev:040x}", files=["solution.py"], author="agent"),
                EvalStarted(rev=rev, sha=f"{rev:040x}", device="cpu"),
                EvalFinished(rev=rev, sha=f"{rev:040x}", report=_report(rev % 2 == 0)),
            ]
        for event in batch:
            seq += 1
            event.seq, event.ts = seq, float(seq)
            lines.append(event.model_dump_json())
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    assert seq >= 5000
    contents = read_log(tmp_path / "events.jsonl")
    state = SessionState.from_events(contents.events)
    assert len(contents.events) == seq and not state.seq_problems
    assert len(state.revisions) == 35 and state.best() is not None and state.best().rev == 34


def test_lines_the_runner_did_not_write_are_reported_and_ignored(tmp_path: Path) -> None:
    from workbench.session.integrity import create_key

    create_key(tmp_path)
    with EventWriter(tmp_path) as writer:
        writer.append(Revision(rev=1, sha="a" * 40, files=["solution.py"], author="template"))
        writer.append(EvalStarted(rev=1, sha="a" * 40, device="cpu"))
    log = tmp_path / "events.jsonl"
    sealed = log.read_bytes().splitlines()
    forged = json.loads(sealed[1])
    forged.update(seq=3, type="eval_finished", report={"task": "t", "solution": "s", "device": "cpu", "status": "passed"})
    plain = {k: v for k, v in forged.items() if k != "mac"}
    with log.open("ab") as handle:  # an agent appends a pass, with a copied seal and with none
        handle.write(json.dumps(forged).encode() + b"\n" + json.dumps(plain).encode() + b"\n")
    contents = read_log(log)
    assert [e.type for e in contents.events] == ["revision", "eval_started"]
    assert [b.line for b in contents.bad_lines] == [3, 4]
    assert all("not written by this session's runner" in b.message for b in contents.bad_lines)
    tail = LogTail(log)
    assert [e.type for e in tail.poll()] == ["revision", "eval_started"] and len(tail.bad_lines) == 2
    with EventWriter(tmp_path) as writer:  # the runner goes on from its own last line
        writer.append(EvalStarted(rev=1, sha="b" * 40, device="cpu"))
    assert [e.seq for e in read_log(log).events] == [1, 2, 3]


def test_a_changed_line_invalidates_it_and_every_later_line(tmp_path: Path) -> None:
    from workbench.session.integrity import create_key

    create_key(tmp_path)
    with EventWriter(tmp_path) as writer:
        for rev in (1, 2, 3):
            writer.append(Revision(rev=rev, sha=str(rev) * 40, files=["solution.py"], author="human"))
    log = tmp_path / "events.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"author":"human"', b'"author":"templ"', 1))
    contents = read_log(log)
    assert contents.events == [] and [b.line for b in contents.bad_lines] == [1, 2, 3]
