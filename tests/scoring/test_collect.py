"""Sessions -> records: what each session contributes, read from session.toml and the event log."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import UsageError
from workbench.scoring.collect import collect, find_sessions, read_session
from workbench.scoring.testing import Step, review, scored_session, timed, untimed
from workbench.session.store import SessionStore

from .conftest import MUON, TOY, W1, W2


def test_agent_session_record(bench_root: Path) -> None:
    record = read_session(bench_root / "a-none-muon")
    assert (record.task, record.guidance, record.mode) == (MUON, "none", "code")
    assert record.group.driver == "agent" and record.group.model == "model-a" and record.group.provider == "openai"
    assert record.group.label == "model-a"
    assert record.axis == "turn" and record.steps == 7
    assert [(r.rev, r.step, r.status) for r in record.revisions] == [(1, 0, "runtime_error"), (2, 3, "passed"), (3, 7, "passed")]
    assert record.submission_rev == 3 and record.first_correct is not None and record.first_correct.rev == 2
    assert record.device_models == ["NVIDIA H200"]
    submitted = record.submission
    assert submitted is not None
    assert [(w.name, w.latency_ms, w.reference_ms) for w in submitted.workloads] == [(W1, 2, 4), (W2, 1, 8)]
    # 7 model calls of 100 / 1000 / 10 / 20 / 5 tokens at $0.50
    t = record.tokens
    assert (t.calls, t.uncached_input, t.cache_read, t.cache_write, t.output, t.reasoning) == (7, 700, 7000, 70, 140, 35)
    assert t.cost_usd == pytest.approx(3.5) and t.unpriced_calls == 0
    (judged,) = record.verdicts
    assert (judged.kind, judged.rev, judged.levels, judged.reviewed) == ("impl", 3, {"L1": 60, "L2": 70, "L3": 50}, ["L3"])


def test_command_and_design_sessions(tmp_path: Path, bench_root: Path) -> None:
    ref = scored_session(tmp_path, TOY, [Step(0, untimed(TOY, ["v1"], status="runtime_error")), Step(0, untimed(TOY, ["v1"]))])
    record = read_session(ref.dir)
    assert record.group.driver == "command" and record.group.label == "command: synthetic"
    assert record.axis == "revision" and [r.step for r in record.revisions] == [1, 2] and record.steps == 2
    assert record.device_models == []  # untimed evaluations take no part in the device rule
    assert record.tokens.calls == 0
    design = read_session(bench_root / "a-design-muon")
    assert design.mode == "design" and design.verdict("design") is not None
    assert design.verdict("design").levels == {"L1": 40, "L2": 50, "L3": 60}  # type: ignore[union-attr]


def test_unpriced_calls_and_malformed_verdicts(tmp_path: Path) -> None:
    ref = scored_session(
        tmp_path,
        MUON,
        [Step(2, timed(MUON, {W1: (1, 1)}))],
        model="m",
        cost_usd=None,
        verdicts=[(1, {"levels": {"L1": {"score": "high"}}})],
        reviews=[(1, review("L2", 40))],
    )
    record = read_session(ref.dir)
    assert record.tokens.unpriced_calls == 2 and record.tokens.cost_usd == 0
    assert any("judge verdict" in note for note in record.notes)
    # the review of a revision the judge did not (validly) score still counts for its level
    (only,) = record.verdicts
    assert only.levels == {"L1": None, "L2": 40, "L3": None}


def test_find_sessions(tmp_path: Path, bench_root: Path) -> None:
    found = find_sessions([bench_root])
    assert {p.name for p in found} == {
        "a-none-muon", "a-none-toy", "b-none-muon", "b-none-toy", "a-l1-muon", "a-l1-toy", "a-design-muon",
    }  # fmt: skip
    assert find_sessions([bench_root / "b-none-toy", bench_root])[0].name == "b-none-toy"  # named first, once
    assert len(find_sessions([bench_root, bench_root / "b-none-toy"])) == 7
    nested = tmp_path / "runs" / "model-a"
    nested.mkdir(parents=True)
    (nested / "link").symlink_to(bench_root / "a-l1-toy")
    assert [p.name for p in find_sessions([tmp_path / "runs"])] == ["link"]


def test_find_sessions_refuses_bad_paths(tmp_path: Path, bench_root: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UsageError, match="holds no sessions"):
        find_sessions([tmp_path / "empty"])
    with pytest.raises(UsageError, match="not a session or a folder of sessions"):
        find_sessions([tmp_path / "file.txt"])
    with pytest.raises(UsageError, match="no such session or folder"):
        find_sessions([tmp_path / "missing" / "x"])
    with pytest.raises(UsageError, match="no sessions found"):
        find_sessions([])
    store = SessionStore(bench_root, examples=None)
    assert find_sessions(["b-none-toy"], store)[0].name == "b-none-toy"  # a session id of the store
    with pytest.raises(UsageError, match="no such folder"):
        find_sessions(["nothing-like-it"], store)


def test_collect_strict_or_not(tmp_path: Path, bench_root: Path) -> None:
    broken = tmp_path / "root" / "broken"
    broken.mkdir(parents=True)
    (broken / "session.toml").write_text("format = 1\n")
    with pytest.raises(UsageError, match="cannot read session"):
        collect([tmp_path / "root"])
    loose = collect([tmp_path / "root", bench_root / "a-l1-toy"], strict=False)
    assert [r.id for r in loose.records] == ["a-l1-toy"] and loose.problems[0][0] == broken
