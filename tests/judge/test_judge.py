"""One verdict with the scripted judge: the prompt (what it holds and what it never holds), valid citations,
re-asks with the exact errors (at most two), levels recorded invalid, malformed JSON, a failed revision scored
0 without a model call, and the verdict's shape as scoring reads it."""

from __future__ import annotations

import json

import pytest

from workbench.catalog import Catalog
from workbench.errors import UsageError
from workbench.judge import MalformedReply, judge_session, parse_levels, prompt_hash, run_judge
from workbench.judge.prompt import FIELDS, SYSTEM_TEMPLATE, USER_TEMPLATES, canonical_design, fill, package_text, reply_schema
from workbench.judge.sessions import judge_input, resolve_target, task_material
from workbench.judge.testing import ScriptedJudge
from workbench.judge.verdict import JudgeReply
from workbench.llm import ProviderError, UserTurn
from workbench.session.events import JudgeVerdict
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore

from .helpers import BROKEN_LEVEL, L1, L2, L3, LATENCY_MS, SOLUTION, comment_only, good_levels, out_of_range, paraphrased, reply


def test_templates_name_only_known_fields_and_the_hash_follows_them() -> None:
    for name, fields in FIELDS.items():
        text = package_text(name)
        fill(text, dict.fromkeys(fields, "x"), name)  # every field it names is known
        with pytest.raises(UsageError, match="unknown field"):
            fill(text, {}, name)
    assert len({prompt_hash("impl"), prompt_hash("design")}) == 2
    assert prompt_hash("impl") == prompt_hash("impl")
    assert set(USER_TEMPLATES) == {"impl", "design"} and SYSTEM_TEMPLATE in FIELDS


def test_the_schema_and_the_pydantic_models_agree() -> None:
    schema = reply_schema()
    level = schema["$defs"]["level"]
    assert (
        set(level["required"])
        == set(level["properties"])
        == set(JudgeReply.model_fields["levels"].annotation.__args__[1].model_fields)
    )  # type: ignore[union-attr]
    citation = schema["$defs"]["citation"]
    assert set(citation["required"]) == set(citation["properties"]) == {"file", "start_line", "end_line", "quote", "criterion"}
    JudgeReply.model_validate(json.loads(reply()))  # a reply of the schema's shape validates


def test_with_the_rubric_the_schema_names_each_levels_criteria_as_an_enum() -> None:
    schema = reply_schema({"L1": L1, "L2": L2, "L3": L3})
    assert set(schema["$defs"]) == {f"{kind}_{level}" for kind in ("level", "citation") for level in ("L1", "L2", "L3")}
    for level, ids in (("L1", L1), ("L2", L2), ("L3", L3)):
        assert schema["properties"]["levels"]["properties"][level] == {"$ref": f"#/$defs/level_{level}"}
        definition = schema["$defs"][f"level_{level}"]
        assert all(definition["properties"][group]["items"]["enum"] == ids for group in ("realized", "partial", "missing"))
        assert schema["$defs"][f"citation_{level}"]["properties"]["criterion"]["enum"] == ids
        assert definition["required"] == schema["$defs"][f"level_{level}"]["required"]  # still strict-mode shaped
    assert reply_schema()["$defs"]["level"]["properties"]["realized"]["items"] == {"type": "string"}  # the generic one


def test_the_impl_prompt_holds_task_guidance_rubric_expert_and_numbered_candidate_but_no_runtime(
    store: SessionStore, session: SessionRef, catalog: Catalog
) -> None:
    view = store.load(session)
    material = task_material(catalog, view.config.task)
    prompt = judge_input(resolve_target(store, view), material)
    user = prompt.user
    assert material.task.description_text().strip()[:200] in user
    for level in ("## L1: Algorithmic insights", "## L2: Dataflow design", "## L3: Low-level optimisation tricks"):
        assert level in user
    assert all(c.id in user and c.property.strip() in user for c in material.rubric.criteria)
    assert "Expert evidence: `_segment`" in user
    assert material.expert_source is not None and material.expert_source.strip() in user
    width = len(str(len(SOLUTION.splitlines())))
    # the candidate's docstring and comments are its author's claims: the judge is shown its code only
    assert f'{"1":>{width}} | ""' in user and "A small candidate: its docstring." not in user
    assert "acc = tl.dot(p, q, acc)" in user and '<candidate file="solution.py" revision="2">' in user
    for runtime in (f"{LATENCY_MS}", "123.45", "latency_ms", "speedup"):
        assert runtime not in user and runtime not in prompt.system
    assert '"start_line"' in prompt.system  # the schema is in the system message
    assert prompt.prompt_hash == prompt_hash("impl") and len(prompt.input_hash) == 64


def test_a_verdict_with_valid_citations_is_recorded(store: SessionStore, session: SessionRef, catalog: Catalog) -> None:
    judge = ScriptedJudge([reply()])
    outcome = judge_session(store, session, catalog, judge, temperature=0.0)
    verdict = outcome.verdict
    assert verdict.complete and verdict.rev == 2 and verdict.kind == "impl"
    assert {level: v.score for level, v in verdict.levels.items()} == {"L1": 10, "L2": 40, "L3": 30}
    assert verdict.js == pytest.approx(80 / 3)
    assert verdict.calls[0].usage == judge.usage and len(verdict.calls) == 1 and verdict.reasks == []
    assert verdict.provider == "scripted" and verdict.judge == "scripted-judge" and verdict.temperature == 0.0
    assert verdict.cost_usd is None  # the scripted model has no price
    assert all(check.ok for level in verdict.levels.values() for check in level.verification)
    view = store.load(session)
    assert (session.dir / ".log-key").is_file() and view.bad_lines == []  # sealed by the session's own writer
    assert '"mac":"' in session.log_path.read_text().splitlines()[-1]
    [event] = [e for e in view.events if isinstance(e, JudgeVerdict)]
    assert event.rev == 2 and event.verdict == verdict.model_dump(mode="json") and event.seq == outcome.event.seq
    assert event.verdict["levels"]["L1"]["citations"][0]["file"] == "solution.py"
    assert len(judge.conversations) == 1 and judge.conversations[0].system.startswith("You are the judge of D2K-Bench")


@pytest.mark.parametrize("broken", [paraphrased, comment_only, out_of_range], ids=["paraphrase", "comment-only", "out-of-range"])
def test_a_failed_citation_is_reasked_with_its_errors_and_a_fixed_one_accepted(
    store: SessionStore, session: SessionRef, catalog: Catalog, broken: object
) -> None:
    bad = broken()  # type: ignore[operator]
    level = BROKEN_LEVEL[broken.__name__]  # type: ignore[attr-defined]
    judge = ScriptedJudge([reply(**{level: bad}), reply()])
    verdict = judge_session(store, session, catalog, judge).verdict
    assert verdict.complete and len(verdict.calls) == 2
    [reask] = verdict.reasks
    assert reask.reason == "verification" and reask.levels == [level] and reask.attempt == 2
    message = judge.conversations[1].messages[-1]
    assert isinstance(message, UserTurn)
    for error in reask.errors:
        assert f"- {error}" in message.text
    kept = [name for name in ("L1", "L2", "L3") if name != level]
    assert f"{', '.join(kept)} verified and are kept" in message.text
    assert verdict.levels[level].attempt == 2 and all(verdict.levels[k].attempt == 1 for k in kept)


def test_a_level_still_failing_after_two_reasks_is_recorded_invalid(
    store: SessionStore, session: SessionRef, catalog: Catalog
) -> None:
    judge = ScriptedJudge([reply(L3=paraphrased())] * 3)
    verdict = judge_session(store, session, catalog, judge).verdict
    assert len(verdict.calls) == 3 and len(verdict.reasks) == 2  # never a third re-ask
    l3 = verdict.levels["L3"]
    assert (l3.score, l3.valid, l3.invalid, l3.proposed_score) == (None, False, True, 30)
    assert "the quote is not the text of the cited lines" in l3.errors[0]
    assert verdict.complete is False and verdict.js is None
    data = verdict.model_dump(mode="json")["levels"]["L3"]
    assert data["score"] is None and data["invalid"] is True and data["errors"] == l3.errors
    assert verdict.levels["L1"].valid and verdict.levels["L2"].valid


def test_malformed_json_is_reasked(store: SessionStore, session: SessionRef, catalog: Catalog) -> None:
    judge = ScriptedJudge(['{"levels": {"L1": ', f"```json\n{reply()}\n```"])
    verdict = judge_session(store, session, catalog, judge).verdict
    assert verdict.complete and verdict.reasks[0].reason == "malformed"
    message = judge.conversations[1].messages[-1]
    assert isinstance(message, UserTurn) and "It could not be read: the reply is not valid JSON" in message.text
    judge = ScriptedJudge(["no JSON at all"] * 3)
    verdict = judge_session(store, session, catalog, judge).verdict
    assert not verdict.complete and all(v.invalid for v in verdict.levels.values())
    assert verdict.levels["L1"].errors == ["L1: the reply is not valid JSON: Expecting value: line 1 column 1 (char 0)"]


def test_schema_errors_of_one_level_are_that_levels_errors() -> None:
    levels = good_levels()
    levels["L2"] = {**levels["L2"], "score": 140}
    del levels["L3"]
    parsed = parse_levels(json.dumps({"levels": levels}))
    assert not isinstance(parsed["L1"], list)
    assert parsed["L2"] == ["L2.score: Input should be less than or equal to 100"]
    assert parsed["L3"] == ['L3: missing from "levels"']
    with pytest.raises(MalformedReply, match='no "levels" object'):
        parse_levels('{"verdict": 1}')
    with pytest.raises(MalformedReply, match="not an object"):
        parse_levels("[1, 2]")


def test_a_failed_revision_scores_zero_and_asks_no_model(store: SessionStore, session: SessionRef, catalog: Catalog) -> None:
    judge = ScriptedJudge([])
    for rev, status in ((1, "runtime_error"), (3, "incorrect_numerical")):
        verdict = judge_session(store, session, catalog, lambda: judge, rev=rev).verdict
        assert verdict.model_called is False and verdict.revision_status == status and verdict.js == 0.0
        assert all(v.score == 0 and v.valid for v in verdict.levels.values()) and verdict.calls == []
    assert judge.conversations == []


def test_a_provider_failing_for_good_records_nothing(store: SessionStore, session: SessionRef, catalog: Catalog) -> None:
    judge = ScriptedJudge([ProviderError("openai model x: authentication failed (HTTP 401)", retryable=False)])
    with pytest.raises(ProviderError):
        judge_session(store, session, catalog, judge)
    assert not any(isinstance(e, JudgeVerdict) for e in store.load(session).events)


def test_transient_errors_are_retried_inside_one_call(store: SessionStore, session: SessionRef, catalog: Catalog) -> None:
    import itertools

    count = itertools.count()

    def flaky(_: object) -> str | ProviderError:
        return ProviderError("rate limited", retryable=True, retry_after_s=0) if next(count) < 2 else reply()

    view = store.load(session)
    prompt = judge_input(resolve_target(store, view), task_material(catalog, view.config.task))
    lines: list[str] = []
    verdict = run_judge(ScriptedJudge([flaky]), prompt, sleep=lambda _: None, progress=lines.append)
    assert verdict.complete and verdict.calls[0].retries == 2 and verdict.reasks == []
    assert any(line.startswith("retry 1 in 0.0 s") for line in lines)


def test_canonical_design_text_sorts_keys_with_two_space_indent() -> None:
    assert canonical_design('{"b": 1, "a": {"d": [1, 2], "c": "é"}}') == (
        '{\n  "a": {\n    "c": "é",\n    "d": [\n      1,\n      2\n    ]\n  },\n  "b": 1\n}\n'
    )
    with pytest.raises(UsageError, match="not valid JSON"):
        canonical_design("{nope")
