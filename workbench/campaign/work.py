"""One unit of a campaign on one worker: create its session (once), run or resume it, judge it.

Runs inside the process the executor started for the unit (`d2k-workbench campaign unit FILE KEY`), whose
environment already pins it: CUDA_VISIBLE_DEVICES names the one GPU it may use (set by the local pool, or
by Ray for a task that asked for one GPU), so the session's device is plain "cuda" and every evaluation,
checker and sandboxed solution alike, inherits the pin.

State lives on disk only (the session directories and the campaign's records), so any number of reruns,
on any machine that sees the shared sessions directory, agree on what is left:
- a unit's session id is fixed by its cell, and the directory is created exclusively: never two sessions;
- a session cut off (its runner killed) is resumed by its own resume, which rebuilds the conversation and
  the budget from the log: no model call of a logged turn is repeated and no budget is spent twice;
- a finished session is never run again.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, replace
from typing import Literal

from workbench.agent import agent_driver, agent_outcome
from workbench.campaign.plan import Unit, model_priced
from workbench.campaign.spec import Campaign
from workbench.catalog import Catalog
from workbench.judge.prompt import DESIGN_FILE
from workbench.judge.providers import make_judge_provider
from workbench.judge.sessions import NothingToJudge, judge_session
from workbench.session.config import CONFIG_NAME
from workbench.session.create import create_session
from workbench.session.layout import LOG_NAME
from workbench.session.runner import Runner, stop_on_signals
from workbench.session.state import SessionState
from workbench.session.store import SessionStore

UnitState = Literal["pending", "interrupted", "running", "finished", "failed", "judged"]


@dataclass(frozen=True)
class UnitStatus:
    state: UnitState
    session_id: str
    passed: bool = False
    cost_usd: float | None = None
    turns: int = 0
    reason: str = ""  # why a failed session failed
    device_name: str = ""
    judged: bool = False
    # the session ended as a result with nothing that scores (no passing revision; a design run without a
    # design): a failed attempt, done once judged (0, no model asked), never retried
    attempt_failed: bool = False
    # nothing passed and its latest evaluation was skipped: the task's workloads need more device memory than the
    # GPU had (task.toml device_memory_gib); neither a result nor a failed attempt, counted apart
    skipped: bool = False
    priced: bool = True  # the unit's model has a price (else its spend is unknown: status.spend_of)


def store_for(campaign: Campaign) -> SessionStore:
    return SessionStore(campaign.sessions_dir, examples=None)


def unit_status(campaign: Campaign, unit: Unit, store: SessionStore | None = None) -> UnitStatus:
    """What the disk says about a unit (read-only; safe while other processes run units)."""
    store = store or store_for(campaign)
    session_dir = campaign.sessions_dir / unit.session_id
    priced = model_priced(unit.model)
    if not (session_dir / CONFIG_NAME).is_file():
        return UnitStatus("pending", unit.session_id, priced=priced)
    ref = store.resolve(unit.session_id)
    running = store.is_running(ref)
    if not (session_dir / LOG_NAME).is_file():
        return UnitStatus("running" if running else "interrupted", unit.session_id, priced=priced)
    view = store.load(ref)
    state: SessionState = view.state
    outcome = agent_outcome(state)
    judged = state.counts.get("judge_verdict", 0) > 0
    submitted = state.revisions.get(state.submission.rev) if state.submission and state.submission.rev else None
    devices = [r.report.device_name for r in state.ordered() if r.report is not None and r.report.device_name]
    passed = submitted is not None and submitted.passed
    designed = any(DESIGN_FILE in r.files for r in state.ordered())
    evaluated = [r for r in state.ordered() if r.report is not None]
    skipped = unit.kind != "design" and not passed and bool(evaluated) and evaluated[-1].status == "skipped"
    base = UnitStatus(
        "finished",
        unit.session_id,
        passed=passed,
        cost_usd=outcome.cost_usd,
        turns=outcome.turns,
        device_name=devices[-1] if devices else "",
        judged=judged,
        attempt_failed=not designed if unit.kind == "design" else not passed and not skipped,
        skipped=skipped,
        priced=priced,
    )
    if running:
        return replace(base, state="running", attempt_failed=False, skipped=False)
    if state.finished is None:
        return replace(base, state="interrupted", attempt_failed=False, skipped=False)
    if outcome.failure is not None or state.outcome == "infrastructure":  # never a result: retried
        done = state.driver_finished
        reason = outcome.failure or (done.reason if done is not None else "")
        return replace(base, state="failed", reason=reason, attempt_failed=False, skipped=False)
    return replace(base, state="judged") if judged else base


def ensure_session(campaign: Campaign, catalog: Catalog, unit: Unit, store: SessionStore) -> None:
    """Create the unit's session unless it exists. A directory left half-made by a crash during creation
    (no session.toml, or no log and no workspace) held no model call and is made again."""
    spec = campaign.spec
    session_dir = campaign.sessions_dir / unit.session_id
    if session_dir.exists():
        complete = (session_dir / CONFIG_NAME).is_file() and (session_dir / "workspace" / ".git").is_dir()
        if complete or (session_dir / LOG_NAME).is_file():
            return
        shutil.rmtree(session_dir)
    try:
        create_session(
            store,
            catalog,
            unit.task,
            guidance=unit.guidance,
            driver=spec.agent_config(unit.model, unit.kind),
            device="cpu" if spec.device == "cpu" or not unit.needs_gpu else "cuda",
            workloads=spec.workloads if unit.needs_gpu else None,
            eval_timeout_s=spec.eval_timeout_s,
            session_id=unit.session_id,
            repetition=unit.repetition,
        )
    except FileExistsError:
        return  # another worker made it first: run that one


def run_unit(campaign: Campaign, catalog: Catalog, unit: Unit) -> UnitStatus:
    """Create (once) and run or resume the unit's session to its end; returns its status afterwards."""
    store = store_for(campaign)
    before = unit_status(campaign, unit, store)
    if before.state in ("finished", "judged", "running"):
        return before
    ensure_session(campaign, catalog, unit, store)
    ref = store.resolve(unit.session_id)
    runner = Runner(store, ref, catalog, idle_exit=None, on_event=None, agent=agent_driver())
    with stop_on_signals(runner):
        runner.run()
    return unit_status(campaign, unit, store)


def judge_unit(campaign: Campaign, catalog: Catalog, unit: Unit) -> UnitStatus:
    """Judge the unit's finished session with the campaign's judge model, once (a verdict on record is kept).
    A failed attempt (no passing revision, no design) is judged too: 0 at every level, recorded with no model
    call, so the unit is done like any other."""
    judge = campaign.spec.judge
    store = store_for(campaign)
    status = unit_status(campaign, unit, store)
    if judge is None or status.state != "finished":
        return status
    ref = store.resolve(unit.session_id)
    with contextlib.suppress(NothingToJudge):  # a session with nothing to judge keeps its status
        judge_session(store, ref, catalog, lambda: make_judge_provider(judge.provider, judge.model, judge.base_url))
    return unit_status(campaign, unit, store)


__all__ = ["UnitState", "UnitStatus", "ensure_session", "judge_unit", "run_unit", "store_for", "unit_status"]
