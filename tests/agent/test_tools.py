"""The tools' confinement and their answers to malformed calls: error results, never a crash or an escape."""

from __future__ import annotations

from pathlib import Path

from workbench.agent.testing import ScriptedProvider, call, turn
from workbench.agent.tools import MAX_OUTPUT, truncate
from workbench.session.events import EvalSkipped, EvalStarted, ModelCall, Revision, ToolCall, ToolResult
from workbench.session.store import SessionStore

from .helpers import FakeEvaluator, agent_session, of, run_agent


def results_by_call(store: SessionStore, ref_id: str) -> list[tuple[str, ToolResult]]:
    events = store.load(store.resolve(ref_id)).events
    names = {(c.turn, c.call_id): c.name for c in of(events, ToolCall)}
    return [(names[(r.turn, r.call_id)], r) for r in of(events, ToolResult)]


def test_paths_outside_the_workspace_and_git_are_refused(store: SessionStore, tmp_path: Path) -> None:
    ref = agent_session(store)
    secret = tmp_path / "outside.txt"
    secret.write_text("the expert's secret\n")
    (ref.workspace / "escape").symlink_to(secret)  # a symlink inside the workspace pointing out of it
    (ref.workspace / "escape_dir").symlink_to(tmp_path)
    (ref.workspace / "inside").symlink_to(ref.workspace / "solution.py")  # a symlink that stays inside
    refused = [
        call("read_file", path="../outside.txt"),
        call("read_file", path="task/../../outside.txt"),
        call("read_file", path=str(secret)),
        call("read_file", path="/etc/passwd"),
        call("read_file", path="~/.bashrc"),
        call("read_file", path="escape"),
        call("read_file", path="escape_dir/outside.txt"),
        call("write_file", path="escape", content="overwritten"),
        call("edit_file", path="escape", old="secret", new="public"),
        call("write_file", path="../planted.py", content="x = 1\n"),
        call("read_file", path=".git/config"),
        call("write_file", path=".git/hooks/post-commit", content="#!/bin/sh\n"),
        call("read_file", path="./.git/HEAD"),
        call("read_file", path="task/../solution.py"),  # any '..' is refused, even one that would stay inside
    ]
    allowed = [call("read_file", path="inside"), call("read_file", path="./solution.py")]
    provider = ScriptedProvider([turn(*refused), turn(*allowed), turn(call("list_files")), turn(call("submit"))])
    run_agent(store, ref, provider)

    results = results_by_call(store, ref.id)
    assert len(results) == len(refused) + len(allowed) + 2
    for (_, result), request in zip(results[: len(refused)], refused, strict=True):
        assert not result.ok, (request.arguments, result.content)
        assert (
            "outside the workspace" in result.content
            or "'..'" in result.content
            or "absolute" in result.content
            or (".git" in result.content and "not accessible" in result.content)
        ), result.content
        assert "the expert's secret" not in result.content
    assert secret.read_text() == "the expert's secret\n"
    assert not (tmp_path / "planted.py").exists() and not (tmp_path / "sessions" / "planted.py").exists()
    assert not (ref.workspace / ".git" / "hooks" / "post-commit").exists()
    for _, result in results[len(refused) : len(refused) + len(allowed)]:
        assert result.ok and "def run(G: torch.Tensor, steps: int)" in result.content
    listing = results[-2][1].content
    assert "escape -> " in listing and "escape_dir -> " in listing and ".git" not in listing.replace(".gitignore", "")
    events = store.load(ref).events
    revisions = of(events, Revision)  # 2: the symlinks, found when the runner started; nothing refused was committed
    assert [r.rev for r in revisions] == [1, 2] and sorted(revisions[1].files) == ["escape", "escape_dir", "inside"]


def test_malformed_calls_get_error_results_and_the_session_goes_on(store: SessionStore) -> None:
    ref = agent_session(store)
    (ref.workspace / "notes.txt").write_text("alpha\nbeta\nalpha\n")
    calls = [
        call("read_file", raw='{"path": "solution.py"'),  # not JSON
        call("read_file", raw='["solution.py"]'),  # JSON, but not an object
        call("read_file"),  # missing path
        call("read_file", path=7),  # wrong type
        call("read_file", path="solution.py", start_line=0),
        call("read_file", path="solution.py", colour="red"),  # unknown argument
        call("read_file", path="nowhere.py"),
        call("read_file", path="task"),
        call("read_file", path="solution.py", start_line=9, end_line=3),
        call("edit_file", path="notes.txt", old="gamma", new="delta"),  # no match
        call("edit_file", path="notes.txt", old="alpha", new="delta"),  # two matches
        call("edit_file", path="notes.txt", old="", new="delta"),
        call("run_tests", workloads=["no_such_workload"]),
        call("benchmark"),  # a CPU session
        call("profile"),  # a CPU session
        call("compile_kernel", path="solution.py"),  # no such tool
        call("submit_design", design={}),  # a design-mode tool in code mode
    ]
    provider = ScriptedProvider(
        [
            turn(*calls),
            turn(
                call("read_file", path="solution.py", start_line=2, end_line=3),
                call("edit_file", path="notes.txt", old="beta", new="gamma"),
            ),
            turn(call("submit")),
        ]
    )
    result = run_agent(store, ref, provider)
    assert result.reason.startswith("the agent submitted")
    results = results_by_call(store, ref.id)
    errors = [r.content.split("\n\nturns left")[0] for _, r in results[: len(calls)]]
    assert all(not r.ok for _, r in results[: len(calls)])
    expected = [
        "the arguments of read_file were not a JSON object",
        "the arguments of read_file were not a JSON object",
        "bad arguments for read_file: path: Field required",
        "bad arguments for read_file: path: Input should be a valid string",
        "bad arguments for read_file: start_line: Input should be greater than or equal to 1",
        "bad arguments for read_file: colour: Extra inputs are not permitted",
        "nowhere.py does not exist",
        "task is a folder",
        "end_line 3 is before start_line 9",
        "`old` was not found in notes.txt",
        "`old` occurs 2 times in notes.txt (at lines 1, 3)",
        "bad arguments for edit_file: old: String should have at least 1 character",
        "unknown workload(s) no_such_workload; this session evaluates: smoke_b8_m64_n200, smoke_b8_m128_n384",
        "benchmark needs a GPU session",
        "profile needs a GPU session",
        "unknown tool 'compile_kernel'",
        "unknown tool 'submit_design'",
    ]
    for error, start in zip(errors, expected, strict=True):
        assert error.startswith(start), (error, start)
    numbered, edited = results[len(calls)][1], results[len(calls) + 1][1]
    assert numbered.ok and numbered.content.startswith("solution.py: lines 2-3 of ") and "\n2  " in numbered.content
    assert edited.ok and (ref.workspace / "notes.txt").read_text() == "alpha\ngamma\nalpha\n"
    events = store.load(ref).events
    assert [c.turn for c in of(events, ModelCall)] == [1, 2, 3]
    raw = of(events, ToolCall)[0]
    assert raw.arguments == {"raw_arguments": '{"path": "solution.py"'}
    assert "notes.txt" in of(events, Revision)[-1].files


def test_long_outputs_keep_their_head_and_tail_with_a_marker() -> None:
    text = "".join(f"line {n}\n" for n in range(20_000))
    cut = truncate(text)
    assert len(cut) <= MAX_OUTPUT + 100
    assert cut.startswith("line 0\nline 1\n") and cut.endswith("line 19999\n")
    assert "characters (" in cut and "lines) cut from the middle of this output" in cut
    assert truncate("short") == "short"


def test_a_long_file_read_is_cut_with_a_marker(store: SessionStore) -> None:
    ref = agent_session(store)
    (ref.workspace / "big.py").write_text("".join(f"x{n} = {n}\n" for n in range(5000)))
    run_agent(store, ref, ScriptedProvider([turn(call("read_file", path="big.py")), turn(call("submit"))]))
    content = results_by_call(store, ref.id)[0][1].content
    assert "cut from the middle of this output" in content and "x4999 = 4999" in content
    assert content.endswith(f"turns left: {349}")
    assert (ref.workspace / "big.py").stat().st_size > MAX_OUTPUT


def test_testing_the_untouched_template_is_an_error_result_and_evaluates_nothing(store: SessionStore) -> None:
    ref = agent_session(store)
    evaluator = FakeEvaluator()
    run_agent(store, ref, ScriptedProvider([turn(call("run_tests")), turn(call("submit"))]), evaluator)
    (name, result), _ = results_by_call(store, ref.id)
    assert name == "run_tests" and not result.ok and "still the task's template" in result.content, result.content
    assert evaluator.seen == []  # the template never reaches the harness
    events = store.load(ref).events
    assert [(e.rev, e.reason) for e in of(events, EvalSkipped)] == [(1, "template")]
    assert not of(events, EvalStarted)
