"""A campaign's judge step on its real path: `campaign run` with a `[judge]` model finds the unit's session
finished, starts the judging job (`campaign unit`, a process of its own, as every unit), which judges the
session through the OpenAI SDK against a scripted judge on 127.0.0.1; the verdict is in the session's log
and `campaign status` counts the unit judged. A second run sends the judge nothing: a session is judged
once. The key is in no file of the campaign."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from judge.helpers import make_code_session, reply
from llm.fake_servers import FakeModelServer, ModelTurn

from workbench.campaign.plan import Unit, expand
from workbench.campaign.spec import Campaign, load_campaign
from workbench.catalog import Catalog
from workbench.session.eventlog import read_log
from workbench.session.events import JudgeVerdict

from .helpers import KEY, REPO

pytestmark = pytest.mark.slow  # two `campaign run`s, each starting unit processes (a few seconds each)


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env |= {"OPENAI_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "workbench", "campaign", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=240
    )


def _write(path: Path, base_url: str) -> Path:
    path.write_text(
        f"""name = "judged"
sessions_dir = "sessions"
tasks = ["muon_orthogonalize"]
guidance = ["L1+L2+L3"]
device = "cpu"

[[models]]
provider = "openai"
model = "gpt-4.1"
base_url = "{base_url}"

[judge]
provider = "openai"
model = "gpt-4.1"
base_url = "{base_url}"
"""
    )
    return path


def _campaign(tmp_path: Path, base_url: str) -> tuple[Path, Campaign, Unit]:
    """The campaign file, the campaign and its one unit, with its sessions folder made."""
    path = _write(tmp_path / "judged.toml", base_url)
    campaign = load_campaign(path)
    [unit] = expand(campaign, Catalog(REPO / "tasks", REPO / "guidance"))
    campaign.sessions_dir.mkdir(parents=True)
    return path, campaign, unit


def test_a_finished_session_is_judged_once_through_the_sdk(tmp_path: Path) -> None:
    with FakeModelServer("openai-chat") as server:
        server.respond_with(lambda body: ModelTurn(text=reply(), model="gpt-4.1"))
        path, campaign, unit = _campaign(tmp_path, server.base_url)
        # the unit's session, finished: revision 2 passed and is the submission
        make_code_session(campaign.sessions_dir, session_id=unit.session_id)

        first = _run(["run", str(path)])
        assert first.returncode == 0, first.stdout + first.stderr
        [request] = server.requests  # one judge call; the finished session itself was not run again
        assert request.body["model"] == "gpt-4.1" and request.body["response_format"]["type"] == "json_schema"
        log = read_log(campaign.sessions_dir / unit.session_id / "events.jsonl")
        [verdict] = [e for e in log.events if isinstance(e, JudgeVerdict)]
        assert verdict.verdict["levels"]["L2"]["score"] == 40 and verdict.verdict["model"] == "gpt-4.1"

        status = _run(["status", str(path), "--json"])
        data = json.loads(status.stdout)
        assert status.returncode == 0 and data["counts"] == {"judged": 1}, status.stdout

        second = _run(["run", str(path)])
        assert second.returncode == 0, second.stdout + second.stderr
        assert len(server.requests) == 1  # judged once
        log = read_log(campaign.sessions_dir / unit.session_id / "events.jsonl")
        assert sum(isinstance(e, JudgeVerdict) for e in log.events) == 1

    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert KEY.encode() not in file.read_bytes(), file


def test_a_failed_attempt_is_judged_0_without_a_call_and_the_campaign_completes(tmp_path: Path) -> None:
    # issue 58, item 1: `judge` said "no revision passed", the unit was given up ("judging failed 2 time(s)")
    # and every `campaign run` exited 1
    from workbench.session.testing import finished_session, timed_report

    with FakeModelServer("openai-chat") as server:
        server.respond_with(lambda body: ModelTurn(text=reply(), model="gpt-4.1"))
        path, campaign, unit = _campaign(tmp_path, server.base_url)
        failing = timed_report("muon_orthogonalize", {"w": (1.0, 1.0)}, status="incorrect_numerical", device="cpu")
        finished_session(
            campaign.sessions_dir, "muon_orthogonalize", ["def run(G, steps):\n    return G\n"] * 2,
            lambda rev: failing, session_id=unit.session_id,
        )  # fmt: skip

        first = _run(["run", str(path)])
        assert first.returncode == 0, first.stdout + first.stderr
        assert "1/1 done (1 failed attempt(s), scored 0)" in first.stdout and "given up" in first.stdout
        assert server.requests == []  # a failed attempt scores 0 with no model call
        status = _run(["status", str(path), "--json"])
        data = json.loads(status.stdout)
        assert status.returncode == 0 and data["counts"] == {"judged": 1} and data["failed_attempts"] == 1, status.stdout
        assert data["units"][0]["failed_attempt"] is True and data["units"][0]["passed"] is False
        assert _run(["run", str(path)]).returncode == 0
    log = read_log(campaign.sessions_dir / unit.session_id / "events.jsonl")
    [verdict] = [e for e in log.events if isinstance(e, JudgeVerdict)]
    assert verdict.verdict["js"] == 0.0 and verdict.verdict["model_called"] is False
