"""A whole campaign on the CPU: 2 models x 3 tasks x 2 guidance configurations, each session the built-in
agent talking through the OpenAI SDK to a scripted model on 127.0.0.1, every revision evaluated by the real
harness (gpt-4.1 writes an honest kernel and passes; coder-7b, a weak model, submits at once and fails).

Started on the local pool of 2 workers and killed (SIGKILL to the whole process group) in the middle, the
campaign is finished by a local Ray instance (`--executor ray`), which resumes the cut-off sessions and runs
the rest; a third run (local) finds nothing to do and calls no model. No duplicate session, no logged turn
twice, no budget spent twice; `report` over its sessions gives the paper's tables with both configurations
of every pair. (One campaign serves both executors to keep the suite's time; docs/performance.md has two
full runs, local pool and Ray, measured separately. Design runs: tests/campaign/test_design_unit.py.)"""

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

pytestmark = pytest.mark.slow  # 8 or 12 CPU sessions per campaign run


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": str(REPO)}


def _campaign(args: list[str], suite: tuple[Path, Path], **kwargs: object) -> subprocess.Popen[str]:
    tasks, guidance = suite
    command = [sys.executable, "-m", "workbench", "campaign", *args, "--tasks-dir", str(tasks), "--guidance-dir", str(guidance)]
    return subprocess.Popen(command, env=_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)  # type: ignore[call-overload]


def _check_sessions(path: Path, suite: tuple[Path, Path]) -> None:
    """Every unit finished in its own session: coding sessions passed with exactly turns 1 and 2 logged,
    design runs submitted a valid design in turn 1; the spend equals the calls' cost."""
    campaign = load_campaign(path)
    units = expand(campaign, Catalog(*suite))
    status = campaign_status(campaign, units)
    assert status.counts() == {"finished": len(units)}, status.to_json()["units"]
    on_disk = sorted(p.name for p in campaign.sessions_dir.iterdir() if not p.name.startswith("."))
    assert on_disk == sorted(u.session_id for u in units)  # no duplicate, no stray session
    calls_made = {"gpt-4.1": 0, "coder-7b": 0}
    for row in status.rows:
        unit = row.unit
        session = campaign.sessions_dir / unit.session_id
        calls = [e for e in read_log(session / "events.jsonl").events if isinstance(e, ModelCall)]
        if unit.kind == "code" and unit.model.name == "gpt-4.1":
            assert row.status.passed, unit.session_id
            assert [c.turn for c in calls] == [1, 2], unit.session_id  # no turn asked twice, none lost
        elif unit.kind == "code":  # the weak model submits at once: a finished session that did not pass
            assert not row.status.passed and [c.turn for c in calls] == [1], unit.session_id
        else:
            assert [c.turn for c in calls] == [1] and (session / "workspace" / "model_design.json").is_file()
        calls_made[unit.model.name] += len(calls)
    # each call: 1000 uncached + 2000 cached input, 400 output; gpt-4.1 at the table's price, coder-7b at
    # the file's (cache reads at the input price)
    gpt, coder = (1000 * 2.0 + 2000 * 0.5 + 400 * 8.0) / 1e6, (3000 * 0.2 + 400 * 0.6) / 1e6
    assert status.spend_usd == pytest.approx(calls_made["gpt-4.1"] * gpt + calls_made["coder-7b"] * coder)


def test_a_campaign_killed_in_the_middle_is_finished_by_ray_with_no_duplicate(tiny_tasks: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    suite = make_suite(tiny_tasks, tmp_path / "suite")
    model = CountingModel()
    with FakeModelServer("openai-chat") as server:
        server.respond_with(model)
        path = write_campaign(tmp_path / "campaign.toml", server.base_url, tasks=("muon_a",))  # 4 sessions: 2 models x 2 guidance
        campaign = load_campaign(path)
        units = expand(campaign, Catalog(*suite))
        first = _campaign(["run", str(path)], suite, start_new_session=True)
        deadline = time.time() + 240
        while time.time() < deadline and first.poll() is None:
            done = campaign_status(campaign, units).counts().get("finished", 0)
            if done >= 1:
                break
            time.sleep(0.5)
        assert first.poll() is None, first.communicate()[0]  # still running: kill it mid-way
        os.killpg(first.pid, signal.SIGKILL)  # the coordinator and every session it started
        first.communicate()
        cut = campaign_status(campaign, units)
        assert 1 <= cut.counts().get("finished", 0) < 4
        interrupted = cut.counts().get("interrupted", 0) + cut.counts().get("running", 0)

        second = _campaign(["run", str(path), "--executor", "ray"], suite)
        out, _ = second.communicate(timeout=400)
        assert second.returncode == 0, out
        assert "4/4 done" in out
        _check_sessions(path, suite)
        # a turn asked again only where a kill cut its answer off (at most one per interrupted session)
        assert len(model.duplicates()) <= interrupted, (model.duplicates(), interrupted)

        # a third run has nothing left to do and calls no model
        asked = len(server.requests)
        third = _campaign(["run", str(path)], suite)
        out, _ = third.communicate(timeout=120)
        assert third.returncode == 0 and "4/4 done" in out and len(server.requests) == asked

        status = _campaign(["status", str(path), "--json"], suite)
        data = json.loads(status.communicate(timeout=60)[0])
        assert status.returncode == 0 and data["complete"] and data["counts"] == {"finished": 4}

    # the paper's tables over the campaign's sessions, with the pairs
    tasks, _ = suite
    report = subprocess.run(
        [sys.executable, "-m", "workbench", "report", "--campaign", str(path), "--format", "json", "--tasks-dir", str(tasks)],
        env=_env(), cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    tables = json.loads(report.stdout)
    text = json.dumps(tables)
    for name in ("gpt-4.1", "coder-7b", "none", "L1+L2+L3", "muon_a"):
        assert name in text, name
