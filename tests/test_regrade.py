"""Re-grading (`d2k-workbench regrade`, workbench/session/regrade.py): the `regrade` event, the latest grade
winning wherever a session's result is read, and a cheat passed by an older harness refused by the current one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench import paths
from workbench.catalog import Catalog
from workbench.cli import app
from workbench.device import resolve_device
from workbench.errors import UsageError
from workbench.harness.host.evaluate import evaluate
from workbench.harness.host.version import harness_version
from workbench.harness.protocol.report import EvalReport, Status
from workbench.scoring import build_results, build_tables, collect, render_markdown
from workbench.session.config import load_config, write_config
from workbench.session.eventlog import EventWriter, SessionLocked, read_log
from workbench.session.events import EVENT_ADAPTER, Regrade
from workbench.session.layout import SessionRef
from workbench.session.regrade import regrade_device, regrade_session, targets
from workbench.session.state import SessionState, older_harness
from workbench.session.store import SessionStore
from workbench.session.testing import finished_session, timed_report, write_events

cli = CliRunner()
TASK = "muon_orthogonalize"
REPO = paths.REPO_ROOT
EXAMPLES = REPO / "sessions" / "examples"
EXAMPLE = "20261130-053407-muon_orthogonalize-eab7"  # revision 4 passed on the CPU, the submission
NAIVE = (REPO / "tests" / "solutions" / "muon_naive.py").read_text()
# A correct solution that also asks for the working folder: harmless when it runs, refused by the static policy
# ([files] os.getcwd is not allowed). An older harness without that check would have passed it.
CHEAT = NAIVE + "\nimport os  # noqa: E402\n\n_HERE = os.getcwd()\n"
SOLUTIONS = ["def run(G, steps):\n    raise NotImplementedError\n", "def run(G, steps):\n    return G\n", CHEAT]


def report(status: Status = "passed", version: str = "", ms: float = 1.0) -> EvalReport:
    made = timed_report(TASK, {"w1": (ms, 2.0)}, status=status, device="cpu", duration_s=0.5)
    return made.model_copy(update={"harness_version": version})


def regrade_event(rev: int, sha: str, status: Status, version: str, old: EvalReport) -> Regrade:
    new = report(status, version, ms=4.0)
    return Regrade(
        rev=rev,
        sha=sha,
        harness_version=version,
        old_harness_version=old.harness_version,
        old_status=old.status,
        status=status,
        old_geomean_speedup=old.geomean_speedup(),
        geomean_speedup=new.geomean_speedup(),
        report=new,
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def passed(root: Path) -> SessionRef:
    """A finished session: revision 2 failed, revision 3 passed (the submission), graded by an older harness."""
    return finished_session(
        root, TASK, SOLUTIONS, lambda rev: None if rev == 1 else report("passed" if rev == 3 else "incorrect_numerical")
    )


def test_the_regrade_event_round_trips_and_is_sealed(passed: SessionRef) -> None:
    state = SessionState.from_events(read_log(passed.log_path).events)
    event = regrade_event(3, state.revisions[3].sha, "policy_violation", "h-0123456789abcdef", report())
    assert EVENT_ADAPTER.validate_json(event.model_dump_json()) == event
    [written] = write_events(passed, [event])
    contents = read_log(passed.log_path)
    read = contents.events[-1]
    assert not contents.bad_lines and read.model_copy(update={"mac": None}) == written
    assert read.type == "regrade" and read.mac is not None  # sealed like the runner's lines


def test_the_latest_grade_wins_in_the_state_the_summary_and_the_report(root: Path, passed: SessionRef) -> None:
    store = SessionStore(root)
    before = store.summary(passed)
    assert (before.best_rev, before.best_status, before.best_harness) == (3, "passed", "")
    assert before.older_harness  # "" is a report older than the versions
    sha = store.load(passed).state.revisions[3].sha
    current = harness_version()
    first = regrade_event(3, sha, "passed", "h-aaaaaaaaaaaaaaaa", report())
    write_events(passed, [first, regrade_event(3, sha, "policy_violation", current, first.report)])
    state = store.load(passed).state
    revision = state.revisions[3]
    assert revision.status == "policy_violation" and revision.regrade is not None and revision.regrade.seq == state.last_seq
    assert revision.harness_version == current and revision.geomean_speedup == pytest.approx(0.5)
    assert state.submission is not None and state.submission.rev == 3  # the submission stands, and now fails
    after = store.summary(passed)
    assert (after.best_rev, after.best_status, after.best_speedup) == (3, "policy_violation", pytest.approx(0.5))
    assert not after.older_harness
    [record] = collect([passed.dir]).records
    assert record.submission is not None and record.submission.status == "policy_violation" and not record.submission.passed
    assert record.submission.harness_version == current
    results = build_results([record])
    [cell] = results.cells
    assert (cell.status, cell.correct, cell.older_harness) == ("policy_violation", False, False)


def test_the_report_marks_a_result_graded_by_an_older_harness(passed: SessionRef) -> None:
    results = build_results(collect([passed.dir]).records)
    [cell] = results.cells
    assert (cell.status, cell.correct, cell.harness_version, cell.older_harness) == ("passed", True, "", True)
    [table] = build_tables(results, ["sessions"])
    assert table.column("harness") == ["older"]
    assert any("older harness" in note and "regrade" in note for note in table.notes)
    assert "older harness" in render_markdown([table], "caption")


def test_targets_are_the_result_by_default_and_every_evaluated_revision_with_all(passed: SessionRef) -> None:
    state = SessionState.from_events(read_log(passed.log_path).events)
    assert [r.rev for r in targets(state)] == [3]
    assert [r.rev for r in targets(state, all_revisions=True)] == [2, 3]  # revision 1 was never evaluated


def test_regrade_records_a_regrade_per_revision_from_its_committed_file(root: Path, passed: SessionRef) -> None:
    seen: list[tuple[str, str]] = []

    def fake(task, solution: Path, device: str, config) -> EvalReport:  # type: ignore[no-untyped-def]
        text = solution.read_text()
        seen.append((solution.name, "os.getcwd" if "os.getcwd" in text else text.strip()))
        status: Status = "policy_violation" if "os.getcwd" in text else "incorrect_numerical"
        return EvalReport(task=task.id, solution=str(solution), device=device, status=status, harness_version=harness_version())

    store = SessionStore(root)
    lines: list[str] = []
    outcome = regrade_session(
        store,
        passed,
        Catalog(REPO / "tasks", REPO / "guidance"),
        device="cpu",
        all_revisions=True,
        evaluator=fake,
        progress=lines.append,
    )
    assert seen == [("solution.py", "def run(G, steps):\n    return G"), ("solution.py", "os.getcwd")]
    assert [(r.rev, r.old_status, r.status, r.flipped, r.recorded) for r in outcome.results] == [
        (2, "incorrect_numerical", "incorrect_numerical", False, True),
        (3, "passed", "policy_violation", True, True),
    ]
    assert outcome.note == "" and len(lines) == 2 and "evaluating revision 3 (2/2) on cpu" in lines[1]
    events = [e for e in read_log(passed.log_path).events if isinstance(e, Regrade)]
    assert [(e.rev, e.old_status, e.status, e.old_harness_version, e.harness_version) for e in events] == [
        (2, "incorrect_numerical", "incorrect_numerical", "", harness_version()),
        (3, "passed", "policy_violation", "", harness_version()),
    ]
    assert events[1].old_geomean_speedup == pytest.approx(2.0) and events[1].geomean_speedup is None


def test_a_shipped_example_is_regraded_without_writing(root: Path) -> None:
    store = SessionStore(root, EXAMPLES)
    ref = store.resolve(EXAMPLE)
    before = ref.log_path.read_bytes()

    def fake(task, solution: Path, device: str, config) -> EvalReport:  # type: ignore[no-untyped-def]
        return EvalReport(task=task.id, solution=str(solution), device=device, status="passed", harness_version=harness_version())

    outcome = regrade_session(store, ref, Catalog(REPO / "tasks", REPO / "guidance"), device="cpu", evaluator=fake)
    assert [(r.rev, r.old_status, r.status, r.recorded) for r in outcome.results] == [(4, "passed", "passed", False)]
    assert outcome.note.startswith(f"nothing was written: session {ref.id} is a shipped example (read-only)")
    assert f"cp -r {ref.dir} {root}/" in outcome.note
    assert ref.log_path.read_bytes() == before


def test_a_session_being_run_is_refused(root: Path, passed: SessionRef) -> None:
    store = SessionStore(root)
    with EventWriter(passed.dir, secrets={}):  # holds the runner lock, as a runner does
        with pytest.raises(SessionLocked, match="is being run by pid"):
            regrade_session(store, passed, Catalog(REPO / "tasks", REPO / "guidance"), device="cpu", evaluator=None)
        result = cli.invoke(app, ["regrade", passed.id, "--sessions-dir", str(root), "--device", "cpu"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "is being run by pid" in result.output and "regrade it when the run has ended" in result.output


def test_bad_input_exits_2_with_one_line(root: Path, passed: SessionRef, tmp_path: Path) -> None:
    unknown = cli.invoke(app, ["regrade", "nosuchsession", "--sessions-dir", str(root)])
    assert unknown.exit_code == 2 and "no session 'nosuchsession'" in unknown.output
    assert len(unknown.output.strip().splitlines()) == 1 and "Traceback" not in unknown.output
    folder = cli.invoke(app, ["regrade", str(tmp_path), "--sessions-dir", str(root)])
    assert folder.exit_code == 2 and "not a session folder" in folder.output
    device = cli.invoke(app, ["regrade", passed.id, "--device", "tpu", "--sessions-dir", str(root)])
    assert device.exit_code == 2 and "unknown device 'tpu'" in device.output
    assert "regrade" in cli.invoke(app, ["--help"]).output


def test_by_default_a_session_is_regraded_on_its_own_device_and_a_missing_gpu_is_named(root: Path, passed: SessionRef) -> None:
    """A GPU session regraded on the CPU would lose its timings: without --device it is refused where its
    device is missing (one line saying what to do), before anything is evaluated."""
    config = load_config(passed.dir)
    assert regrade_device(config, None) == "cpu" and regrade_device(config, "cpu") == "cpu"
    gpu = config.model_copy(update={"device": "cuda"})
    write_config(passed.dir, gpu)
    with pytest.raises(UsageError, match="was evaluated on cuda, which this machine does not have: pass --device cpu"):
        regrade_device(gpu, None, count=lambda: 0)
    if resolve_device("auto") == "cpu":  # this machine has no GPU: the CLI refuses with the same line
        result = cli.invoke(app, ["regrade", passed.id, "--sessions-dir", str(root)])
        assert result.exit_code == 2 and "pass --device cpu" in result.output
        assert not [e for e in SessionStore(root).load(passed).events if e.type == "regrade"]


@pytest.mark.slow
def test_regrade_of_a_copied_example_reevaluates_its_submission_on_the_cpu(root: Path) -> None:
    root.mkdir(parents=True)
    shutil.copytree(EXAMPLES / EXAMPLE, root / EXAMPLE)
    result = cli.invoke(app, ["regrade", str(root / EXAMPLE), "--sessions-dir", str(root), "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row | {"sha": "", "message": ""} == {
        "session": EXAMPLE,
        "rev": 4,
        "sha": "",
        "old_status": "passed",
        "status": "passed",
        "old_geomean_speedup": None,
        "geomean_speedup": None,
        "old_harness_version": "",
        "harness_version": harness_version(),
        "device": "cpu",
        "flipped": False,
        "recorded": True,
        "message": "",
    }
    store = SessionStore(root)
    [event] = [e for e in store.load(EXAMPLE).events if isinstance(e, Regrade)]
    assert (event.rev, event.report.status, event.report.harness_version) == (4, "passed", harness_version())
    assert not store.summary(store.resolve(EXAMPLE)).older_harness


@pytest.mark.slow
def test_a_cheat_passed_without_the_static_policy_flips_to_policy_violation(root: Path, tiny_tasks: Path) -> None:
    """The issue's case: a revision judged `passed` by an older harness (here: the static policy off) is refused
    by the current one; the regrade records it, lists the flip, and the result counts as failed from then on."""
    catalog = Catalog(tiny_tasks, REPO / "guidance")
    task = catalog.task(TASK)
    old: dict[int, EvalReport] = {}

    def graded_without_policy(rev: int) -> EvalReport | None:
        return old.get(rev)

    scratch = root.parent / "cheat.py"
    scratch.write_text(CHEAT)
    old[2] = evaluate(task, scratch, "cpu", static_policy=False)
    assert old[2].status == "passed" and old[2].harness_version == harness_version(static_policy=False)
    ref = finished_session(root, TASK, [SOLUTIONS[0], CHEAT], graded_without_policy)
    store = SessionStore(root)
    assert store.summary(ref).best_status == "passed" and store.summary(ref).older_harness
    [cell] = build_results(collect([ref.dir]).records).cells
    assert (cell.correct, cell.older_harness) == (True, True)

    result = cli.invoke(app, ["regrade", ref.id, "--sessions-dir", str(root), "--tasks-dir", str(tiny_tasks), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == ref.id
    assert lines[1].startswith(f"  rev 2  passed -> policy_violation  speedup - -> -  harness {harness_version(False)} -> ")
    assert lines[1].endswith(f"{harness_version()}  FLIP")
    assert lines[2:] == ["flips: 1", f"  {ref.id} rev 2: passed -> policy_violation"]

    [event] = [e for e in store.load(ref).events if isinstance(e, Regrade)]
    assert (event.old_status, event.status, event.old_harness_version, event.harness_version) == (
        "passed",
        "policy_violation",
        harness_version(static_policy=False),
        harness_version(),
    )
    assert any("os.getcwd" in v.detail for v in event.report.violations)
    row = store.summary(ref)
    assert (row.best_rev, row.best_status, row.older_harness) == (2, "policy_violation", False)
    [cell] = build_results(collect([ref.dir]).records).cells
    assert (cell.status, cell.correct, cell.older_harness) == ("policy_violation", False, False)
    assert not older_harness(cell.harness_version)
