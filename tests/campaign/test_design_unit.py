"""A campaign's design run, end to end in-process: the unit's session is created once with its fixed id, the
built-in agent in design mode submits a valid design through the OpenAI SDK to a scripted model on
127.0.0.1, nothing is evaluated and no GPU is asked for; running the unit again calls no model."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm.fake_servers import FakeModelServer

from workbench.campaign.plan import expand
from workbench.campaign.spec import load_campaign
from workbench.campaign.work import run_unit, unit_status
from workbench.catalog import Catalog
from workbench.session.eventlog import read_log
from workbench.session.events import EvalStarted, ModelCall
from workbench.session.store import SessionStore

from .helpers import KEY, CountingModel, make_suite, write_campaign


def test_a_design_run_submits_a_design_once(tiny_tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    suite = make_suite(tiny_tasks, tmp_path / "suite", ids=("muon_a",))
    catalog = Catalog(*suite)
    model = CountingModel()
    with FakeModelServer("openai-chat") as server:
        server.respond_with(model)
        path = write_campaign(tmp_path / "c.toml", server.base_url, extra="design_runs = true\n")
        path.write_text(path.read_text().replace('tasks = ["muon_a", "muon_b", "muon_c"]', 'tasks = ["muon_a"]'))
        campaign = load_campaign(path)
        units = expand(campaign, catalog)
        design = next(u for u in units if u.kind == "design" and u.model.name == "gpt-4.1" and u.guidance == "L1+L2+L3")
        assert not design.needs_gpu and design.session_id == "mini--gpt-4.1--muon_a--L1L2L3--r1--design"
        status = run_unit(campaign, catalog, design)
        assert status.state == "finished" and status.turns == 1 and status.cost_usd == pytest.approx(6200e-6)
        asked = len(server.requests)
        again = run_unit(campaign, catalog, design)  # finished: not run again
        assert again.state == "finished" and len(server.requests) == asked == 1
    session = campaign.sessions_dir / design.session_id
    events = read_log(session / "events.jsonl").events
    assert [e.turn for e in events if isinstance(e, ModelCall)] == [1]
    assert not any(isinstance(e, EvalStarted) for e in events)  # a design run evaluates nothing
    assert (session / "workspace" / "model_design.json").is_file()
    config = SessionStore(campaign.sessions_dir, examples=None).load(design.session_id).config
    assert config.design_mode and config.device == "cpu" and config.guidance == "L1+L2+L3"
    # the other units of the campaign have not started
    others = [u for u in units if u.key != design.key]
    assert {unit_status(campaign, u).state for u in others} == {"pending"}
