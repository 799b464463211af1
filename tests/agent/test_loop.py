"""The agent loop through the real runner with a scripted model and a fake evaluator (seconds per test).

What a user relies on: every model call is one logged turn with the whole assistant message; every tool
call and its result are logged, results end with the turns left; writes are revisions evaluated as they
land and run_tests reports that revision's evaluation; the conversation's prefix (system prompt, tools,
brief) never changes; budgets, retries and provider failures end the run cleanly.
"""

from __future__ import annotations

import threading

import pytest

from workbench.agent import AgentDriver, agent_outcome
from workbench.agent.loop import prompt
from workbench.agent.testing import ScriptedProvider, call, flat_pricer, last_results, turn
from workbench.llm import AssistantTurn, Conversation, ProviderError, ToolResultsTurn, UserTurn
from workbench.llm.usage import Usage
from workbench.session.events import (
    DriverFinished,
    Error,
    EvalFinished,
    Event,
    ModelCall,
    ModelRetry,
    Revision,
    SessionFinished,
    Submission,
    ToolCall,
    ToolResult,
)
from workbench.session.runner import Runner
from workbench.session.store import SessionStore

from .helpers import CATALOG, FakeEvaluator, agent_session, of, run_agent, solution


def test_a_scripted_agent_writes_reads_its_failing_tests_fixes_and_submits(store: SessionStore) -> None:
    ref = agent_session(store, max_turns=20)

    def fix(conversation: Conversation) -> AssistantTurn:
        assert "incorrect_numerical" in last_results(conversation)[0]  # the model sees why revision 2 failed
        return turn(call("write_file", path="solution.py", content=solution("passed", 1.0)))

    provider = ScriptedProvider(
        [
            turn(call("list_files"), text="Looking around."),
            turn(call("write_file", path="solution.py", content=solution("incorrect_numerical", 1.0))),
            turn(call("run_tests")),
            fix,
            turn(call("run_tests")),
            turn(call("submit", note="done")),
        ]
    )
    seen: list[Event] = []
    result = run_agent(store, ref, provider, seen=seen)
    events = store.load(ref).events
    assert result.submission_rev == 3 and result.reason == "the agent submitted (done)"

    calls = of(events, ModelCall)
    assert [c.turn for c in calls] == [1, 2, 3, 4, 5, 6]
    assert calls[0].text == "Looking around." and calls[0].message["tool_calls"][0]["name"] == "list_files"
    assert calls[0].model == "scripted-model" and calls[0].cost_usd is None  # unpriced, allowed
    tool_calls, results = of(events, ToolCall), of(events, ToolResult)
    assert [(c.turn, c.name) for c in tool_calls] == [
        (1, "list_files"),
        (2, "write_file"),
        (3, "run_tests"),
        (4, "write_file"),
        (5, "run_tests"),
        (6, "submit"),
    ]
    assert [(r.turn, r.call_id) for r in results] == [(c.turn, c.call_id) for c in tool_calls]
    assert all(r.ok for r in results)
    assert [r.content.rsplit("\n", 1)[-1] for r in results] == [f"turns left: {20 - t}" for t in range(1, 7)]
    assert "solution.py" in results[0].content and "BRIEF.md" in results[0].content
    assert results[1].content.startswith("revision 2: wrote solution.py")
    assert results[2].content.startswith("revision 2 (") and "incorrect_numerical" in results[2].content
    assert results[4].content.startswith("revision 3 (") and "every workload is within the tolerance" in results[4].content

    revisions = of(events, Revision)
    assert [(r.rev, r.author) for r in revisions] == [(1, "template"), (2, "agent"), (3, "agent")]
    assert {e.rev for e in of(events, EvalFinished)} == {2, 3}  # revision 1, the untouched template, is not evaluated
    (submission,) = of(events, Submission)
    assert submission.rev == 3
    assert of(events, DriverFinished)[0].driver == "agent"
    assert isinstance(events[-1], SessionFinished)
    assert [(e.seq, e.type) for e in seen] == [(e.seq, e.type) for e in events]

    # the prompt prefix is the same on every call: system prompt, tools, the brief as the first message
    brief = (ref.workspace / "BRIEF.md").read_text()
    first = provider.seen[0]
    assert first.system == prompt("code") and first.cache_key == ref.id
    assert first.messages == [UserTurn(text=brief)]
    assert [t.name for t in first.tools] == [
        "list_files",
        "read_file",
        "write_file",
        "edit_file",
        "run_tests",
        "benchmark",
        "profile",
        "submit",
    ]
    for later in provider.seen[1:]:
        assert later.system == first.system and later.tools == first.tools and later.messages[0] == first.messages[0]
    assert isinstance(provider.seen[-1].messages[-1], ToolResultsTurn)
    outcome = agent_outcome(store.load(ref).state)
    assert outcome.submitted and outcome.turns == 6 and outcome.failure is None


def test_a_reply_without_a_tool_call_gets_one_reminder_and_counts_as_a_turn(store: SessionStore) -> None:
    ref = agent_session(store, max_turns=10)
    provider = ScriptedProvider([turn(text="I think the kernel should tile by 128."), turn(call("submit"))])
    run_agent(store, ref, provider)
    events = store.load(ref).events
    assert [c.turn for c in of(events, ModelCall)] == [1, 2]
    second = provider.seen[1].messages
    assert isinstance(second[-1], UserTurn) and second[-1].text.startswith("Your reply called no tool.")
    assert second[-1].text.endswith("turns left: 9")
    assert sum(isinstance(m, UserTurn) for m in second) == 2  # the brief and one reminder
    assert [c.name for c in of(events, ToolCall)] == ["submit"]


def test_the_turn_budget_ends_a_model_that_never_submits_and_the_best_revision_is_selected(store: SessionStore) -> None:
    ref = agent_session(store, max_turns=5)
    latencies = iter([3.0, 1.0, 2.0, 0.5, 4.0])

    def keep_writing(conversation: Conversation) -> AssistantTurn:
        status = "incorrect_numerical" if len(conversation.messages) > 8 else "passed"  # the 5th kernel fails
        return turn(call("write_file", path="solution.py", content=solution(status, next(latencies))), call("run_tests"))

    evaluator = FakeEvaluator(device="cuda")
    result = run_agent(store, ref, ScriptedProvider([], then=keep_writing), evaluator)
    events = store.load(ref).events
    assert [c.turn for c in of(events, ModelCall)] == [1, 2, 3, 4, 5]
    assert result.reason == "the turn budget is used up (5 of 5 model calls)"
    # revisions 2..6 hold latencies 3, 1, 2, 0.5 (passed) and 4 (failed): the fastest passing one is rev 5
    assert result.submission_rev == 5
    assert of(events, ToolResult)[-1].content.endswith("turns left: 0")


def test_the_dollar_budget_stops_the_run(store: SessionStore) -> None:
    ref = agent_session(store, max_turns=50, max_usd=1.0, allow_unpriced=False)
    provider = ScriptedProvider([], then=turn(call("list_files")))
    result = run_agent(store, ref, provider, pricer=flat_pricer(0.4))
    calls = of(store.load(ref).events, ModelCall)
    assert [c.cost_usd for c in calls] == [0.4, 0.4, 0.4]  # $1.20 after the third call: no fourth
    assert result.reason.startswith("the dollar budget is used up ($1.2000 of $1")
    assert agent_outcome(store.load(ref).state).cost_usd == pytest.approx(1.2)


def test_transient_failures_are_retried_and_logged(store: SessionStore) -> None:
    ref = agent_session(store)
    waits: list[float] = []
    failures = {
        0: [ProviderError("rate limited", retryable=True, status=429), ProviderError("bad gateway", retryable=True, status=502)]
    }
    provider = ScriptedProvider([turn(call("submit"))], failures=failures)
    result = run_agent(store, ref, provider, sleep=waits.append)
    events = store.load(ref).events
    retries = of(events, ModelRetry)
    assert [(r.turn, r.attempt, r.status) for r in retries] == [(1, 1, 429), (1, 2, 502)]
    assert len(waits) == 2 and all(w > 0 for w in waits)
    assert [c.turn for c in of(events, ModelCall)] == [1] and result.reason.startswith("the agent submitted")


def test_a_provider_failure_that_is_not_transient_ends_the_session_cleanly(store: SessionStore) -> None:
    ref = agent_session(store)
    provider = ScriptedProvider(
        [turn(call("list_files"))],
        then=ProviderError("openai model x: authentication failed (HTTP 401)", retryable=False, status=401),
    )
    result = run_agent(store, ref, provider)
    events = store.load(ref).events
    (error,) = of(events, Error)
    assert error.where == "agent" and "authentication failed" in error.message and "HTTP 401" in error.message
    assert result.reason.startswith("the model provider failed")
    assert isinstance(events[-1], SessionFinished)
    assert agent_outcome(store.load(ref).state).failure == error.message
    assert store.load(ref).state.outcome == "infrastructure"  # never counted as the model's result


def test_a_request_the_model_refuses_is_the_runs_own_failure_not_infrastructure(store: SessionStore) -> None:
    # a conversation grown too long (HTTP 400) is the agent's doing: counted as its result, never discarded
    # and rerun by a campaign as a provider failure would be
    ref = agent_session(store)
    provider = ScriptedProvider(
        [turn(call("list_files"))],
        then=ProviderError("openai model x: context length exceeded (HTTP 400)", retryable=False, status=400),
    )
    result = run_agent(store, ref, provider)
    assert result.reason.startswith("the model refused the request (HTTP 400)")
    assert store.load(ref).state.outcome == "agent_failed"


def test_an_unpriced_model_is_an_error_at_the_start_unless_allowed(store: SessionStore) -> None:
    ref = agent_session(store, allow_unpriced=False)
    provider = ScriptedProvider([turn(call("submit"))])
    result = run_agent(store, ref, provider)
    events = store.load(ref).events
    assert not of(events, ModelCall) and provider.calls == 0
    (error,) = of(events, Error)
    assert error.where == "agent" and "no price for model 'scripted-model'" in error.message
    assert "--allow-unpriced" in error.message and result.reason.startswith("the agent cannot start")


def test_a_stop_during_run_tests_leaves_the_call_to_the_resumed_run_which_runs_it_first(store: SessionStore) -> None:
    ref = agent_session(store, max_turns=10)
    script = [
        turn(call("write_file", path="solution.py", content=solution("passed", 1.0))),
        turn(call("run_tests"), call("list_files")),
        turn(call("submit")),
    ]
    hold = threading.Event()
    first = ScriptedProvider(script)
    runner: Runner | None = None

    def stop_on_run_tests(event: Event) -> None:
        if isinstance(event, ToolCall) and event.name == "run_tests" and runner is not None:
            runner.request_stop("test stop")  # as Ctrl-C while run_tests waits for the evaluation
        if isinstance(event, DriverFinished):
            hold.set()  # the evaluations finish after the driver ended

    driver = AgentDriver(first, catalog=CATALOG, sleep=lambda s: None)
    runner = Runner(
        store, ref, CATALOG, driver=driver, evaluator=FakeEvaluator(hold=hold), on_event=stop_on_run_tests, poll_s=0.2
    )
    result = runner.run()
    assert result.reason.startswith("stopped during turn 2")
    events = store.load(ref).events
    assert [c.name for c in of(events, ToolCall)] == ["write_file", "run_tests"]
    assert len(of(events, ToolResult)) == 1  # run_tests has no result yet; list_files never started

    second = ScriptedProvider(script)
    result = run_agent(store, ref, second)
    events = store.load(ref).events
    assert result.reason.startswith("the agent submitted")
    assert [c.turn for c in of(events, ModelCall)] == [1, 2, 3]  # turn 2 was not paid again
    assert second.calls == 1
    calls, results = of(events, ToolCall), of(events, ToolResult)
    assert sorted((c.turn, c.call_id) for c in calls) == sorted((r.turn, r.call_id) for r in results)
    assert [c.name for c in calls] == ["write_file", "run_tests", "list_files", "submit"]  # run_tests logged once
    run_tests = next(r for r in results if r.call_id == calls[1].call_id)
    assert run_tests.content.startswith("revision 2 (") and "passed" in run_tests.content
    # the rebuilt conversation is what the model saw before, plus the turn's results
    rebuilt = second.seen[0].messages
    assert rebuilt[: len(first.seen[-1].messages)] == first.seen[-1].messages
    assert isinstance(rebuilt[-1], ToolResultsTurn) and [r.name for r in rebuilt[-1].results] == ["run_tests", "list_files"]


def test_a_finished_agent_is_not_run_again(store: SessionStore) -> None:
    ref = agent_session(store)
    run_agent(store, ref, ScriptedProvider([turn(call("submit"))]))
    again = ScriptedProvider([])
    result = run_agent(store, ref, again)
    assert again.calls == 0 and result.reason.startswith("the agent had already ended its work (submit at turn 1)")


def test_usage_is_recorded_per_call(store: SessionStore) -> None:
    ref = agent_session(store, allow_unpriced=False)
    usage = Usage(uncached_input=1500, cache_read=3000, cache_write=0, output=250, reasoning=40)
    run_agent(store, ref, ScriptedProvider([turn(call("submit"))], usage=usage), pricer=flat_pricer(0.02))
    (model_call,) = of(store.load(ref).events, ModelCall)
    assert model_call.usage == usage and model_call.cost_usd == 0.02 and model_call.latency_s >= 0
    assert model_call.stop_reason == "tool_use"
    assert AssistantTurn.model_validate(model_call.message).tool_calls[0].name == "submit"
