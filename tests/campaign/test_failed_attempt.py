"""A failed attempt is a result, not a fault (issue 58, item 1): in a campaign with a `[judge]`, a unit whose
session ended with no passing revision is judged 0 with no model call and counts as done (a failed attempt);
and spend is said one way from the start for a model without a price (item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.campaign.plan import Unit, expand
from workbench.campaign.records import load_record
from workbench.campaign.scheduler import Scheduler
from workbench.campaign.spec import Campaign, load_campaign
from workbench.campaign.status import campaign_status, spend_of, usd
from workbench.campaign.work import judge_unit, unit_status
from workbench.catalog import Catalog
from workbench.judge.verdict import parse_verdict
from workbench.session.events import JudgeVerdict
from workbench.session.store import SessionStore
from workbench.session.testing import finished_session, timed_report

from .helpers import REPO

TASK = "muon_orthogonalize"
BASE = "http://127.0.0.1:9/v1"  # nothing listens: a model call would fail


def _campaign(tmp_path: Path, extra: str = "", model: str = "gpt-4.1") -> tuple[Campaign, Unit, Catalog]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "judged.toml"
    path.write_text(
        f"""name = "judged"
tasks = ["{TASK}"]
guidance = ["none"]
device = "cpu"
{extra}
[[models]]
provider = "openai"
model = "{model}"
base_url = "{BASE}"

[judge]
provider = "openai"
model = "gpt-4.1"
base_url = "{BASE}"
"""
    )
    campaign = load_campaign(path)
    catalog = Catalog(REPO / "tasks", REPO / "guidance")
    [unit] = expand(campaign, catalog)
    return campaign, unit, catalog


def _failing_session(campaign: Campaign, unit: Unit) -> None:
    """The unit's session, ended normally: its agent's kernel never passed (its submission is "none")."""
    failing = timed_report(TASK, {"w": (1.0, 1.0)}, status="incorrect_numerical", device="cpu")
    kernels = ["def run(G, steps):\n    raise NotImplementedError\n", "def run(G, steps):\n    return G\n"]
    finished_session(campaign.sessions_dir, TASK, kernels, lambda rev: failing if rev == 2 else None, session_id=unit.session_id)


def test_a_session_with_no_passing_revision_is_judged_0_without_a_model_and_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a model call could not even be built
    campaign, unit, catalog = _campaign(tmp_path)
    _failing_session(campaign, unit)
    before = unit_status(campaign, unit)
    assert before.state == "finished" and before.attempt_failed and not before.passed

    after = judge_unit(campaign, catalog, unit)
    assert after.state == "judged" and after.attempt_failed
    view = SessionStore(campaign.sessions_dir, examples=None).load(unit.session_id)
    [event] = [e for e in view.events if isinstance(e, JudgeVerdict)]
    verdict = parse_verdict(event.verdict)
    assert verdict.model_called is False and verdict.js == 0.0 and verdict.rev == 2 and verdict.calls == []
    assert "no revision passed" in verdict.note

    status = campaign_status(campaign, [unit])
    assert status.complete and status.done == 1 and status.failed_attempts == 1
    [cell] = status.cells()
    assert (cell.done, cell.passed, cell.failed_attempts, cell.failed) == (1, 0, 1, 0)
    assert status.to_json()["failed_attempts"] == 1


def test_the_scheduler_finishes_a_failed_attempt_instead_of_giving_it_up(tmp_path: Path) -> None:
    campaign, unit, catalog = _campaign(tmp_path)
    _failing_session(campaign, unit)

    class InProcess:
        """A pool that runs the unit's judge step here (what `campaign unit --step judge` does)."""

        name = "in-process"

        def gpu_capacity(self, gpus: object, model: object) -> list[str | None]:
            return []

        def submit(self, job, gpu):  # type: ignore[no-untyped-def]
            from concurrent.futures import Future

            from workbench.campaign.pools import JobResult

            assert job.step == "judge"
            judge_unit(campaign, catalog, unit)
            future: Future[JobResult] = Future()
            future.set_result(JobResult(job=job, returncode=0, host="here", gpu="", started=0.0, ended=0.0, tail=""))
            return future

    snapshot = Scheduler(campaign, [unit], InProcess(), poll_s=0.01).run()  # type: ignore[arg-type]
    assert (snapshot.done, snapshot.failed, snapshot.failed_attempts) == (1, 0, 1)
    record = load_record(campaign, unit.key, unit.session_id)
    assert record.gave_up is None and [(a.step, a.state) for a in record.attempts] == [("judge", "judged")]


class _Stop(Exception):
    pass


def test_spend_of_an_unpriced_model_says_so_from_the_start(tmp_path: Path) -> None:
    # issue 58, item 7: the progress line said "spend $0.0000" until the first call, then "n/a (unpriced model)"
    from workbench.cli.campaign_cmds import _Live

    campaign, unit, _ = _campaign(tmp_path, extra="allow_unpriced = true\n", model="no-such-model-xyz")
    lines: list[str] = []

    def first_line(snapshot):  # type: ignore[no-untyped-def]
        lines.append(_Live(campaign.name).line(snapshot))
        raise _Stop  # the progress shown before any job starts is all this test needs

    with pytest.raises(_Stop):
        Scheduler(campaign, [unit], pool=object(), on_update=first_line).run()  # type: ignore[arg-type]
    assert "spend n/a (unpriced model)" in lines[0] and "$0.0000" not in lines[0]
    pending = unit_status(campaign, unit)
    assert pending.state == "pending" and pending.turns == 0 and not pending.priced
    priced, priced_unit, _ = _campaign(tmp_path / "priced")
    assert usd(spend_of([unit_status(priced, priced_unit)])) == "$0.0000"  # a priced model, nothing spent yet
