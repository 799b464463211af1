"""A whole campaign on the CPU: 2 models x 3 tasks x 2 guidance configurations, each session the built-in
agent talking through the OpenAI SDK to a scripted model on 127.0.0.1 and evaluated by the real harness.

- local pool of 2 workers: killed (SIGKILL to the whole process group) in the middle, rerun, it finishes
  the rest: 12 sessions, no duplicate session, no logged turn twice, no budget spent twice; `report` over
  its sessions gives the paper's tables with both configurations of every pair;
- the same campaign through a local Ray instance."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from llm.fake_servers import FakeModelServer

from workbench.campaign.plan import expand
from workbench.campaign.spec import load_campaign
from workbench.campaign.status import campaign_status
from workbench.catalog import Catalog
from workbench.session.eventlog import read_log
from workbench.session.events import ModelCall

from .helpers import KEY, REPO, CountingModel, make_suite, write_campaign

pytestmark = pytest.mark.slow  # 12 CPU sessions per campaign run (about a minute and a half on 2 cores)


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": str(REPO)}


def _campaign(args: list[str], suite: tuple[Path, Path], **kwargs: object) -> subprocess.Popen[str]:
    tasks, guidance = suite
    command = [sys.executable, "-m", "workbench", "campaign", *args, "--tasks-dir", str(tasks), "--guidance-dir", str(guidance)]
    return subprocess.Popen(command, env=_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)  # type: ignore[call-overload]


def _check_sessions(path: Path, suite: tuple[Path, Path]) -> None:
    """12 sessions, each passed with exactly turns 1 and 2 logged, the spend equal to its calls' cost."""
    campaign = load_campaign(path)
    units = expand(campaign, Catalog(*suite))
    status = campaign_status(campaign, units)
    assert status.counts() == {"finished": 12}, status.to_json()["units"]
    assert all(row.status.passed for row in status.rows)
    on_disk = sorted(p.name for p in campaign.sessions_dir.iterdir() if not p.name.startswith("."))
    assert on_disk == sorted(u.session_id for u in units)  # no duplicate, no stray session
    for unit in units:
        calls = [e for e in read_log(campaign.sessions_dir / unit.session_id / "events.jsonl").events if isinstance(e, ModelCall)]
        assert [c.turn for c in calls] == [1, 2], unit.session_id  # no turn asked twice, none lost
    # 2 calls of 1000 uncached + 2000 cached input and 400 output per session: gpt-4.1 at the table's price,
    # coder-7b at the file's (cache reads at the input price)
    gpt, coder = 2 * (1000 * 2.0 + 2000 * 0.5 + 400 * 8.0) / 1e6, 2 * (3000 * 0.2 + 400 * 0.6) / 1e6
    assert status.spend_usd == pytest.approx(6 * gpt + 6 * coder)


def test_a_campaign_killed_in_the_middle_finishes_on_rerun_with_no_duplicate(tiny_tasks: Path, tmp_path: Path) -> None:
    suite = make_suite(tiny_tasks, tmp_path / "suite")
    model = CountingModel()
    with FakeModelServer("openai-chat") as server:
        server.respond_with(model)
        path = write_campaign(tmp_path / "campaign.toml", server.base_url)
        campaign = load_campaign(path)
        units = expand(campaign, Catalog(*suite))
        first = _campaign(["run", str(path)], suite, start_new_session=True)
        deadline = time.time() + 240
        while time.time() < deadline and first.poll() is None:
            done = campaign_status(campaign, units).counts().get("finished", 0)
            if done >= 4:
                break
            time.sleep(0.5)
        assert first.poll() is None, first.communicate()[0]  # still running: kill it mid-way
        os.killpg(first.pid, signal.SIGKILL)  # the coordinator and every session it started
        first.communicate()
        cut = campaign_status(campaign, units)
        assert 4 <= cut.counts().get("finished", 0) < 12
        interrupted = cut.counts().get("interrupted", 0) + cut.counts().get("running", 0)

        second = _campaign(["run", str(path)], suite)
        out, _ = second.communicate(timeout=400)
        assert second.returncode == 0, out
        assert "12/12 done" in out
        _check_sessions(path, suite)
        # a turn asked again only where a kill cut its answer off (at most one per interrupted session)
        assert len(model.duplicates()) <= interrupted, (model.duplicates(), interrupted)

        # a third run has nothing left to do and calls no model
        asked = len(server.requests)
        third = _campaign(["run", str(path)], suite)
        out, _ = third.communicate(timeout=120)
        assert third.returncode == 0 and "12/12 done" in out and len(server.requests) == asked

        status = _campaign(["status", str(path), "--json"], suite)
        data = json.loads(status.communicate(timeout=60)[0])
        assert status.returncode == 0 and data["complete"] and data["counts"] == {"finished": 12}

    # the paper's tables over the campaign's sessions, with the pairs
    tasks, _ = suite
    report = subprocess.run(
        [sys.executable, "-m", "workbench", "report", str(campaign.sessions_dir), "--format", "json", "--tasks-dir", str(tasks)],
        env=_env(), cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    tables = json.loads(report.stdout)
    text = json.dumps(tables)
    for name in ("gpt-4.1", "coder-7b", "none", "L1+L2+L3", "muon_a", "muon_c"):
        assert name in text, name


def test_the_same_campaign_through_a_local_ray_instance(tiny_tasks: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    suite = make_suite(tiny_tasks, tmp_path / "suite")
    model = CountingModel()
    with FakeModelServer("openai-chat") as server:
        server.respond_with(model)
        path = write_campaign(tmp_path / "campaign.toml", server.base_url, name="mini-ray")
        run = _campaign(["run", str(path), "--executor", "ray"], suite)
        out, _ = run.communicate(timeout=500)
        assert run.returncode == 0, out
        assert "12/12 done" in out
        _check_sessions(path, suite)
        assert model.duplicates() == {}
        assert len(server.requests) == 24
