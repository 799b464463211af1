"""A unit whose evaluations were skipped (its task's workloads need more device memory than the GPU had, issue
55) is done, and counted apart: neither passed, nor a failed attempt, nor a fault."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from workbench.campaign.plan import Unit, expand
from workbench.campaign.spec import Campaign, load_campaign
from workbench.campaign.status import campaign_status
from workbench.campaign.work import unit_status
from workbench.catalog import Catalog
from workbench.cli import app
from workbench.harness.protocol.report import WorkloadResult
from workbench.session.testing import finished_session, timed_report

from .helpers import REPO

TASK = "muon_orthogonalize"
KERNELS = ["def run(G, steps):\n    raise NotImplementedError\n", "def run(G, steps):\n    return G\n"]


def _campaign(tmp_path: Path) -> tuple[Campaign, Unit]:
    path = tmp_path / "memory.toml"
    path.write_text(
        f'name = "memory"\ntasks = ["{TASK}"]\nguidance = ["none"]\ndevice = "cpu"\n\n'
        '[[models]]\nprovider = "openai"\nmodel = "gpt-4.1"\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    campaign = load_campaign(path)
    [unit] = expand(campaign, Catalog(REPO / "tasks", REPO / "guidance"))
    return campaign, unit


def test_a_skipped_unit_is_done_and_counted_apart_from_failed_attempts(tmp_path: Path) -> None:
    campaign, unit = _campaign(tmp_path)
    skipped = timed_report(TASK, {}, status="skipped", device="cpu")
    skipped.workloads = [WorkloadResult(name="w", status="skipped", message="needs 4 GiB of device memory, this GPU has 2.0 GiB")]
    finished_session(campaign.sessions_dir, TASK, KERNELS, lambda rev: skipped if rev == 2 else None, session_id=unit.session_id)

    status = unit_status(campaign, unit)
    assert status.state == "finished" and status.skipped and not status.passed and not status.attempt_failed

    progress = campaign_status(campaign, [unit])
    assert progress.complete and progress.done == 1 and progress.skipped == 1 and progress.failed_attempts == 0
    [cell] = progress.cells()
    assert (cell.done, cell.passed, cell.failed_attempts, cell.skipped, cell.failed) == (1, 0, 0, 1, 0)
    data = progress.to_json()
    assert data["skipped"] == 1 and data["failed_attempts"] == 0
    assert data["units"][0]["skipped"] is True and data["units"][0]["failed_attempt"] is False  # type: ignore[index]

    shown = CliRunner().invoke(app, ["campaign", "status", str(tmp_path / "memory.toml")])
    assert shown.exit_code == 0, shown.output
    assert "1 skipped: more device memory than the GPU had" in " ".join(shown.stdout.split())
    as_json = CliRunner().invoke(app, ["campaign", "status", str(tmp_path / "memory.toml"), "--json"])
    assert json.loads(as_json.stdout)["skipped"] == 1


def test_a_failed_evaluation_is_still_a_failed_attempt(tmp_path: Path) -> None:
    campaign, unit = _campaign(tmp_path)
    failing = timed_report(TASK, {"w": (1.0, 1.0)}, status="incorrect_numerical", device="cpu")
    finished_session(campaign.sessions_dir, TASK, KERNELS, lambda rev: failing if rev == 2 else None, session_id=unit.session_id)
    status = unit_status(campaign, unit)
    assert status.attempt_failed and not status.skipped
    assert campaign_status(campaign, [unit]).skipped == 0
