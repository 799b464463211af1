"""`judge SESSION`, `judge agreement SESSIONS...` and `review SESSION` through a typer app built here (the root
app's registration is the lead's): exit codes, a running session refused, read-only examples refused."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import typer
from llm.fake_servers import FakeModelServer, ModelTurn
from typer.testing import CliRunner

from workbench.catalog import Catalog
from workbench.cli.judge_cmds import judge_app, review_cmd
from workbench.judge import effective_scores, judge_session
from workbench.judge.testing import ScriptedJudge
from workbench.session.eventlog import EventWriter
from workbench.session.events import JudgeVerdict, Review, SessionStarted
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore
from workbench.session.testing import new_session, write_events

from .helpers import good_levels, make_code_session, paraphrased, reply


def judge_app_for_tests() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(judge_app, name="judge")
    app.command("review")(review_cmd)
    return app


def invoke(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(judge_app_for_tests(), [*args, "--sessions-dir", str(root)], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_judge_cli(root: Path, session: SessionRef, server: FakeModelServer, *extra: str) -> tuple[int, str, str]:
    return invoke(root, "judge", session.id, "--provider", "openai", "--model", "gpt-4.1", "--base-url", server.base_url, *extra)


def test_exit_0_when_every_level_verified_1_when_one_is_invalid(root: Path, session: SessionRef) -> None:
    with FakeModelServer("openai-chat") as server:
        server.script(ModelTurn(text=reply()))
        code, out, err = run_judge_cli(root, session, server)
        assert code == 0, err
        assert "revision 2 (impl): verdict recorded" in out and "JS_impl 26.7" in out
        assert "L1       10  solution.py" in out
        assert "asking openai gpt-4.1 (answer 1 of at most 3)" in err
        server.script(*[ModelTurn(text=reply(L3=paraphrased()))] * 3)
        code, out, err = run_judge_cli(root, session, server, "--json")
    assert code == 1
    data = json.loads(out)
    assert data["levels"]["L3"]["invalid"] is True and data["complete"] is False and data["session"] == session.id
    assert "re-asking (1 error(s) in L3)" in err and "still failing after 2 re-ask(s): L3" in err


def test_exit_1_when_there_is_nothing_to_judge_and_2_for_bad_usage(root: Path, session: SessionRef) -> None:
    from workbench.session.testing import finished_session, timed_report

    failing = finished_session(
        root, "muon_orthogonalize", ["def run(G, steps):\n    return G\n"],
        lambda rev: timed_report("muon_orthogonalize", {"w": (1.0, 1.0)}, status="incorrect_numerical", device="cpu"),
    )  # fmt: skip
    code, out, _ = invoke(root, "judge", failing.id, "--provider", "openai", "--model", "m", "--revision", "1")
    assert code == 0 and "JS_impl 0.0" in out  # a failed revision: 0, no key or model needed
    unended = new_session(root, "muon_orthogonalize", "def run(G, steps):\n    return G\n")
    write_events(unended, [SessionStarted(task="muon_orthogonalize", guidance="none", driver="command", device="cpu")])
    code, _, err = invoke(root, "judge", unended.id, "--provider", "openai", "--model", "m")
    assert code == 1 and "has no submission yet" in err
    code, _, err = invoke(root, "judge", session.id, "--provider", "gemini", "--model", "m")
    assert code == 2 and "--provider must be one of: openai, openai-responses, anthropic" in err
    code, _, err = invoke(root, "judge", session.id, "--provider", "openai", "--model", "m")
    assert code == 2 and "no API key: set OPENAI_API_KEY" in err
    code, _, err = invoke(root, "judge", session.id, "--provider", "openai", "--model", "m", "--revision", "9")
    assert code == 2 and "has no revision 9 (revisions 1-3)" in err
    code, _, err = invoke(root, "judge", "nope", "--provider", "openai", "--model", "m")
    assert code == 2 and "no session 'nope'" in err


def test_a_session_where_no_revision_passed_is_a_failed_attempt_scored_0_without_a_model(root: Path) -> None:
    # issue 58, item 1: it was "nothing to judge" (exit 1), so a campaign with a judge never completed
    from workbench.session.testing import finished_session, timed_report

    failing = finished_session(
        root, "muon_orthogonalize", ["def run(G, steps):\n    return G\n", "def run(G, steps):\n    return -G\n"],
        lambda rev: timed_report("muon_orthogonalize", {"w": (1.0, 1.0)}, status="incorrect_numerical", device="cpu"),
    )  # fmt: skip
    code, out, err = invoke(root, "judge", failing.id, "--provider", "openai", "--model", "m", "--json")
    assert code == 0, err  # no key was needed: no model is asked
    verdict = json.loads(out)
    assert verdict["model_called"] is False and verdict["js"] == 0.0 and verdict["rev"] == 2
    assert verdict["revision_status"] == "incorrect_numerical" and "failed attempt: no revision passed" in verdict["note"]
    assert [e.rev for e in SessionStore(root).load(failing).events if isinstance(e, JudgeVerdict)] == [2]


def test_agreement_leaves_the_shipped_examples_out_as_report_does(
    root: Path, session: SessionRef, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 58, item 6: `judge agreement sessions/` counted sessions/examples, which `report` leaves out
    store = SessionStore(root, examples=None)
    example = make_code_session(root, "20261201-071000-muon_orthogonalize-e8a1")
    for ref in (session, example):
        judge_session(store, ref, catalog, ScriptedJudge([reply()]))
        invoke(root, "review", ref.id, "--level", "L3", "--score", "50", "--reason", "pipelined")
    shutil.move(example.dir, root / "examples" / example.id)  # the layout of the checkout: sessions/examples/
    monkeypatch.setenv("D2K_EXAMPLES_DIR", str(root / "examples"))

    code, out, err = invoke(root, "judge", "agreement", str(root), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["sessions"] == 1 and data["examples_left_out"] == 1 and [p["session"] for p in data["pairs"]] == [session.id]
    code, out, _ = invoke(root, "judge", "agreement", str(root))
    assert code == 0 and "1 shipped example(s) left out; --examples counts them" in " ".join(out.split())
    code, out, _ = invoke(root, "judge", "agreement", str(root), "--examples", "--json")
    assert code == 0 and json.loads(out)["sessions"] == 2 and json.loads(out)["examples_left_out"] == 0
    code, out, _ = invoke(root, "judge", "agreement", example.id, "--json")  # named: counted
    assert code == 0 and json.loads(out)["sessions"] == 1
    shutil.rmtree(session.dir)
    code, out, err = invoke(root, "judge", "agreement", str(root))
    assert code == 2 and out == "" and err.strip() == "error: only shipped example sessions were found; --examples counts them"


def test_a_running_session_is_refused(root: Path, session: SessionRef) -> None:
    before = session.log_path.read_bytes()
    with EventWriter(session.dir, secrets={}):  # holds the runner lock, as a runner does (its pid in the lock file)
        code, _, err = invoke(root, "judge", session.id, "--provider", "openai", "--model", "m", "--revision", "1")
        assert code == 2 and f"session {session.id} is being run by pid {os.getpid()}" in err
        code, _, err = invoke(root, "review", session.id, "--level", "L1", "--score", "5", "--reason", "r")
        assert code == 2 and "is being run" in err
    assert session.log_path.read_bytes() == before


def test_review_confirms_or_changes_a_level_and_agreement_compares(root: Path, session: SessionRef, catalog) -> None:  # type: ignore[no-untyped-def]
    store = SessionStore(root, examples=None)
    code, _, err = invoke(root, "review", session.id, "--level", "L1", "--confirm", "--reason", "fine")
    assert code == 2 and "has no judge verdict to review" in err
    judge_session(store, session, catalog, ScriptedJudge([reply()]))
    other = make_code_session(root, "20261201-071000-muon_orthogonalize-0the")
    judge_session(store, other, catalog, ScriptedJudge([reply()]))
    code, out, _ = invoke(root, "review", session.id, "--level", "l1", "--confirm", "--reason", "fine", "--author", "ann")
    assert code == 0 and "L1 confirm 10 (judge 10) by ann" in out
    code, out, _ = invoke(root, "review", session.id, "--level", "L3", "--score", "50", "--reason", "the tiles are pipelined")
    assert code == 0 and "L3 change 50 (judge 30)" in out
    code, _, _ = invoke(root, "review", other.id, "--level", "L3", "--score", "20", "--reason", "less")
    reviews = [e for e in store.load(session).events if isinstance(e, Review)]
    assert [r.review["action"] for r in reviews] == ["confirm", "change"]
    assert reviews[1].review["original_score"] == 30 and reviews[1].review["author"]  # the OS user by default
    assert effective_scores(store.load(session)) == {2: {"L1": 10.0, "L2": 40.0, "L3": 50.0}}
    code, out, err = invoke(root, "review", session.id, "--level", "L4", "--score", "5", "--reason", "x")
    assert code == 2 and "--level must be one of L1, L2, L3" in err
    code, out, err = invoke(root, "review", session.id, "--level", "L2", "--reason", "x")
    assert code == 2 and "give either --score N or --confirm" in err
    code, out, _ = invoke(root, "judge", "agreement", session.id, other.id, "--json")
    assert code == 0
    levels = {row["level"]: row for row in json.loads(out)["levels"]}
    assert levels["L1"] == {"level": "L1", "count": 1, "mean_abs_diff": 0.0, "spearman": None}
    assert levels["L3"]["count"] == 2 and levels["L3"]["mean_abs_diff"] == pytest.approx(15.0)
    assert levels["all"]["count"] == 3
    code, out, _ = invoke(root, "judge", "agreement", session.id)
    assert code == 0 and "judge vs reviewers over 1 session(s)" in out
    # the sessions root as a folder, as the README writes it (issue 30, item 9): both sessions, the same pairs;
    # and no rank correlation from 2 or 3 pairs (2 pairs always gave 1.000)
    code, out, err = invoke(root, "judge", "agreement", str(root), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["sessions"] == 2 and {row["level"]: row["count"] for row in data["levels"]} == {
        "L1": 1,
        "L2": 0,
        "L3": 2,
        "all": 3,
    }
    assert all(row["spearman"] is None for row in data["levels"])
    code, out, _ = invoke(root, "judge", "agreement", str(root))
    assert code == 0 and "n/a (under 5 pairs)" in out
    code, _, err = invoke(root, "judge", "agreement", str(root / "no-such-folder"))
    assert code == 2 and "no such session or folder" in err
    # the review queue: the levels no reviewer has looked at since the verdict (L2 of `session`; L1, L2 of `other`)
    code, out, err = invoke(root, "judge", "queue", "--json")
    assert code == 0, err
    queue = json.loads(out)
    assert queue["sessions"] == 2
    assert {(p["session"], p["level"]) for p in queue["pending"]} == {(session.id, "L2"), (other.id, "L1"), (other.id, "L2")}
    code, out, _ = invoke(root, "judge", "queue", other.id)
    assert code == 0 and "2 level(s) to review in 1 session(s)" in out and f"review {other.id} --revision" in out
    invoke(root, "review", session.id, "--level", "L2", "--confirm", "--reason", "fine")
    code, out, _ = invoke(root, "judge", "queue", session.id)
    assert code == 0 and "nothing to review in 1 session(s)" in out
    # a newer verdict is not covered by the reviews of the older one
    judge_session(store, session, catalog, ScriptedJudge([reply()]))
    code, out, _ = invoke(root, "judge", "queue", session.id, "--json")
    assert {p["level"] for p in json.loads(out)["pending"]} == {"L1", "L2", "L3"}


def test_shipped_examples_are_read_only(tmp_path: Path, root: Path, session: SessionRef) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(session.dir, examples / session.id, ignore=shutil.ignore_patterns("workspace"))
    (root / session.id).rename(tmp_path / "elsewhere")
    result = CliRunner().invoke(
        judge_app_for_tests(),
        ["review", session.id, "--level", "L1", "--score", "1", "--reason", "x", "--sessions-dir", str(root)],
        env={"D2K_EXAMPLES_DIR": str(examples)},
    )
    assert result.exit_code == 2 and "is a shipped example (read-only)" in result.stderr


def _scored(l2: float) -> str:
    return reply(L2={**good_levels()["L2"], "score": l2})


def test_samples_of_several_judges_are_one_group_whose_mean_counts_and_agreement_compares_them(
    root: Path, session: SessionRef
) -> None:
    with FakeModelServer("openai-chat") as server:
        server.script(*(ModelTurn(text=_scored(s)) for s in (40, 50, 20, 30)))
        code, out, err = invoke(
            root, "judge", session.id, "--provider", "openai", "--model", "judge-a", "--model", "judge-b",
            "--samples", "2", "--base-url", server.base_url,
        )  # fmt: skip
        assert code == 0, err
        assert [request.body["model"] for request in server.requests] == ["judge-a", "judge-a", "judge-b", "judge-b"]
    assert "sample 2 of judge-b recorded" in out and "sample 3 of 4" in err
    assert "L2   35.0  20-50  sd 12.9  (4 valid)" in out  # the group's mean and spread
    store = SessionStore(root, examples=None)
    groups = {e.verdict["group"] for e in store.load(session).events if isinstance(e, JudgeVerdict)}
    assert len(groups) == 1 and "" not in groups
    assert effective_scores(store.load(session)) == {2: {"L1": 10.0, "L2": 35.0, "L3": 30.0}}
    code, out, _ = invoke(root, "judge", "agreement", session.id, "--json")
    data = json.loads(out)
    judges = {row["level"]: row for row in data["judges"]}
    assert judges["L2"]["first"] == "judge-a" and judges["L2"]["mean_abs_diff"] == pytest.approx(20.0)  # 45 vs 25
    assert judges["L1"]["mean_abs_diff"] == 0.0 and judges["all"]["count"] == 3
    spreads = {(s["level"], s["model"]): s for s in data["samples"]}
    assert spreads["L2", "judge-a"]["scores"] == [40.0, 50.0] and spreads["L2", "judge-b"]["stdev"] == pytest.approx(
        7.0711, abs=1e-4
    )
    code, out, _ = invoke(root, "judge", "agreement", session.id)
    assert code == 0 and "judge vs judge" in out and "judge-a / judge-b" in out and "samples: spread" in out


def test_samples_and_models_bad_usage_is_exit_2(root: Path, session: SessionRef) -> None:
    code, _, err = invoke(root, "judge", session.id, "--provider", "openai", "--model", "m", "--model", "m")
    assert code == 2 and "names a model twice" in err
    code, _, err = invoke(root, "judge", session.id, "--provider", "openai", "--model", "m", "--samples", "0")
    assert code == 2 and "--samples" in err
