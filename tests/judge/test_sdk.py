"""The judge through the official SDKs (openai, anthropic) against FakeModelServer on 127.0.0.1: a verdict with
valid citations is stored; a paraphrased quote, a comment-only range and an out-of-range line are re-asked and,
when they persist, recorded invalid; malformed JSON is re-asked; a failed revision scores 0 with no request
sent; the JSON schema travels in the request where the API has structured output; the key is in no file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm.fake_servers import ErrorReply, FakeModelServer, ModelTurn
from typer.testing import CliRunner

from workbench.catalog import Catalog
from workbench.judge import judge_session, make_judge_provider
from workbench.judge.providers import SCHEMA_NAME
from workbench.session.events import JudgeVerdict
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore

from .helpers import BROKEN_LEVEL, L1, L3, comment_only, docstring_only, out_of_range, paraphrased, reply

APIS = ["openai-chat", "openai-responses", "anthropic"]
PROVIDER = {"openai-chat": "openai", "openai-responses": "openai-responses", "anthropic": "anthropic"}
MODELS = {"openai-chat": "gpt-4.1", "openai-responses": "o3", "anthropic": "claude-sonnet-4-20250514"}
SECRET = "sk-test-JUDGE-SECRET-0123456789abcdefXYZ"


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(api: str) -> Iterator[FakeModelServer]:
    with FakeModelServer(api) as fake:  # type: ignore[arg-type]
        yield fake


def judge(store: SessionStore, ref: SessionRef, catalog: Catalog, api: str, server: FakeModelServer, **options: object):  # type: ignore[no-untyped-def]
    provider = make_judge_provider(PROVIDER[api], MODELS[api], server.base_url, temperature=0.0)
    return judge_session(store, ref, catalog, provider, sleep=lambda _: None, **options)  # type: ignore[arg-type]


def user_texts(api: str, body: dict[str, object]) -> list[str]:
    """The user messages' texts of a request body, in order."""
    if api == "openai-chat":
        return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]  # type: ignore[index, union-attr, attr-defined]
    if api == "openai-responses":
        return [str(i["content"]) for i in body["input"] if i.get("role") == "user"]  # type: ignore[attr-defined, union-attr]
    return [b["text"] for m in body["messages"] if m["role"] == "user" for b in m["content"]]  # type: ignore[index, union-attr, attr-defined]


def test_a_valid_verdict_is_stored(
    api: str, server: FakeModelServer, store: SessionStore, session: SessionRef, catalog: Catalog
) -> None:
    server.script(ModelTurn(text=reply(), model=MODELS[api]))
    outcome = judge(store, session, catalog, api, server)
    assert outcome.verdict.complete and outcome.verdict.provider == PROVIDER[api] and outcome.verdict.model == MODELS[api]
    assert outcome.verdict.calls[0].request_id == "req_fake1" and outcome.verdict.usage.output > 0
    assert outcome.verdict.cost_usd is not None and outcome.verdict.cost_usd > 0  # priced from the table
    [event] = [e for e in store.load(session).events if isinstance(e, JudgeVerdict)]
    assert event.verdict["levels"]["L2"]["score"] == 40 and event.verdict["temperature"] == 0.0
    [request] = server.requests
    body = request.body
    if api == "openai-chat":
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] == SCHEMA_NAME and body["response_format"]["json_schema"]["strict"]
        defs = body["response_format"]["json_schema"]["schema"]["$defs"]  # the rubric's ids, per level, as enums
        assert defs["level_L1"]["properties"]["realized"]["items"]["enum"] == L1
        assert defs["citation_L3"]["properties"]["criterion"]["enum"] == L3
        assert body["messages"][0]["role"] == "system" and body["temperature"] == 0.0
    elif api == "openai-responses":
        assert body["text"]["format"]["type"] == "json_schema" and body["text"]["format"]["schema"]["required"] == ["levels"]
        assert body["instructions"].startswith("You are the judge") and body["temperature"] == 0.0
    else:
        assert "output_config" not in body and body["system"][0]["text"].startswith("You are the judge")
        assert body["temperature"] == 0.0
    assert "acc = tl.dot(p, q, acc)" in user_texts(api, body)[0]


@pytest.mark.parametrize(
    "broken", [paraphrased, comment_only, docstring_only, out_of_range], ids=["paraphrase", "comment", "docstring", "range"]
)
def test_a_failing_citation_is_reasked_then_recorded_invalid(
    api: str, server: FakeModelServer, store: SessionStore, session: SessionRef, catalog: Catalog, broken: object
) -> None:
    bad = broken()  # type: ignore[operator]
    level = BROKEN_LEVEL[broken.__name__]  # type: ignore[attr-defined]
    server.script(*[ModelTurn(text=reply(**{level: bad}))] * 3)
    verdict = judge(store, session, catalog, api, server).verdict
    assert len(server.requests) == 3 and server.remaining == 0
    found = verdict.levels[level]  # type: ignore[index]
    assert found.invalid and found.score is None and not verdict.complete and verdict.js is None
    expected = {"L1": "do not exist", "L2": "hold no executable source", "L3": "the quote is not the text"}[level]
    assert expected in found.errors[0]
    second = user_texts(api, server.requests[1].body)
    assert len(second) == 2 and found.errors[0] in second[1]  # the exact error went back to the model
    [event] = [e for e in store.load(session).events if isinstance(e, JudgeVerdict)]
    assert event.verdict["levels"][level]["invalid"] is True and event.verdict["complete"] is False


def test_a_corrected_reply_is_accepted_after_a_reask(
    api: str, server: FakeModelServer, store: SessionStore, session: SessionRef, catalog: Catalog
) -> None:
    server.script(ModelTurn(text=reply(L3=paraphrased())), ModelTurn(text=reply()))
    verdict = judge(store, session, catalog, api, server).verdict
    assert verdict.complete and len(verdict.reasks) == 1 and len(server.requests) == 2


def test_malformed_json_is_reasked(
    api: str, server: FakeModelServer, store: SessionStore, session: SessionRef, catalog: Catalog
) -> None:
    server.script(ModelTurn(text="Here is my verdict: {levels: oops"), ModelTurn(text=reply()))
    verdict = judge(store, session, catalog, api, server).verdict
    assert verdict.complete and verdict.reasks[0].reason == "malformed"
    assert "could not be read: the reply is not valid JSON" in user_texts(api, server.requests[1].body)[1]


def test_transient_errors_are_retried(store: SessionStore, session: SessionRef, catalog: Catalog) -> None:
    with FakeModelServer("openai-chat") as server:
        server.script(ErrorReply(429, headers={"retry-after": "0"}), ModelTurn(text=reply()))
        verdict = judge(store, session, catalog, "openai-chat", server).verdict
    assert verdict.complete and verdict.calls[0].retries == 1 and len(server.requests) == 2


def test_a_failed_revision_scores_zero_with_no_request(
    api: str, server: FakeModelServer, store: SessionStore, session: SessionRef, catalog: Catalog
) -> None:
    verdict = judge(store, session, catalog, api, server, rev=3).verdict
    assert verdict.js == 0.0 and not verdict.model_called and server.requests == []


def test_the_key_is_in_no_file(tmp_path: Path, root: Path, session: SessionRef, monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_cli import judge_app_for_tests

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeModelServer("openai-chat") as server:
        server.script(ModelTurn(text=reply(L3=paraphrased())), ModelTurn(text=reply()))
        result = CliRunner().invoke(
            judge_app_for_tests(),
            ["judge", session.id, "--provider", "openai", "--model", "gpt-4.1", "--base-url", server.base_url,
             "--sessions-dir", str(root)],
            catch_exceptions=False,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"  # the key was used
    assert SECRET not in result.output
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert any(isinstance(e, JudgeVerdict) for e in SessionStore(root, examples=None).load(session).events)
