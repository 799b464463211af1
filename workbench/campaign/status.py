"""A campaign's progress read from disk (its sessions and records): for `campaign status`, the TUI and
`campaign run`'s summary. Reading never changes anything, so it is safe while a run is going on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from workbench.campaign.plan import Unit
from workbench.campaign.records import load_record
from workbench.campaign.spec import Campaign
from workbench.campaign.work import UnitStatus, store_for, unit_status


def is_done(state: str, judged: bool) -> bool:
    """A unit is done when its session finished and, in a campaign with a judge (`judged`), was judged: the one
    rule `campaign run`, `campaign status` and the TUI count by."""
    return state == "judged" or (state == "finished" and not judged)


def spend_of(statuses: Iterable[UnitStatus]) -> float | None:
    """Dollars spent by these units' model calls; None when a unit's model has no price (from the start, before
    its first call) or a unit made calls that have no price: a sum of the priced ones would read as the whole
    spend."""
    total = 0.0
    for status in statuses:
        if not status.priced or (status.turns and status.cost_usd is None):
            return None
        total += status.cost_usd or 0.0
    return total


def usd(value: float | None) -> str:
    """A spend for people, the one format of every campaign view: "$0.1234", or "n/a (unpriced model)"."""
    return "n/a (unpriced model)" if value is None else f"${value:.4f}"


def failed_attempts(statuses: Iterable[UnitStatus]) -> int:
    """Units done whose session is a failed attempt (no passing revision, no design): results scored 0."""
    return sum(1 for status in statuses if status.attempt_failed and status.state in ("finished", "judged"))


def skipped_units(statuses: Iterable[UnitStatus]) -> int:
    """Units done whose evaluations were skipped (the task needs more device memory than the GPU had): neither
    passed nor failed attempts, counted apart."""
    return sum(1 for status in statuses if status.skipped and status.state in ("finished", "judged"))


@dataclass(frozen=True)
class UnitRow:
    unit: Unit
    status: UnitStatus
    attempts: int
    gave_up: str | None

    @property
    def state(self) -> str:
        return "gave_up" if self.gave_up else self.status.state


@dataclass
class Cell:
    """Progress of one (model, guidance configuration, kind) column of the matrix."""

    model: str
    guidance: str
    kind: str
    total: int = 0
    done: int = 0
    passed: int = 0
    failed_attempts: int = 0  # done, nothing passed (or no design): a result scored 0
    skipped: int = 0  # done, evaluations skipped (more device memory than the GPU had): not a failure
    running: int = 0
    failed: int = 0  # faults: sessions that failed (retried) or were given up
    spend_usd: float | None = 0.0  # None: a unit's model has no price
    session_ids: list[str] = field(default_factory=list)


@dataclass
class CampaignStatus:
    name: str
    rows: list[UnitRow]
    judged: bool = False  # the campaign judges its sessions: a unit is done once judged

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.state] = out.get(row.state, 0) + 1
        return out

    @property
    def spend_usd(self) -> float | None:
        return spend_of(r.status for r in self.rows)

    @property
    def done(self) -> int:
        return sum(is_done(r.state, self.judged) for r in self.rows)

    @property
    def failed_attempts(self) -> int:
        return failed_attempts(r.status for r in self.rows if is_done(r.state, self.judged))

    @property
    def skipped(self) -> int:
        return skipped_units(r.status for r in self.rows if is_done(r.state, self.judged))

    @property
    def complete(self) -> bool:
        return all(is_done(r.state, self.judged) or r.state == "gave_up" for r in self.rows)

    def cells(self) -> list[Cell]:
        cells: dict[tuple[str, str, str], Cell] = {}
        rows: dict[tuple[str, str, str], list[UnitRow]] = {}
        for row in self.rows:
            u = row.unit
            cell = cells.setdefault((u.model.name, u.guidance, u.kind), Cell(u.model.name, u.guidance, u.kind))
            rows.setdefault((u.model.name, u.guidance, u.kind), []).append(row)
            cell.total += 1
            cell.done += is_done(row.state, self.judged)
            cell.passed += row.status.passed
            cell.running += row.state == "running"
            cell.failed += row.state in ("failed", "gave_up")
            cell.session_ids.append(u.session_id)
        for key, cell in cells.items():
            cell.spend_usd = spend_of(r.status for r in rows[key])
            cell.failed_attempts = failed_attempts(r.status for r in rows[key] if is_done(r.state, self.judged))
            cell.skipped = skipped_units(r.status for r in rows[key] if is_done(r.state, self.judged))
        return list(cells.values())

    def to_json(self) -> dict[str, object]:
        return {
            "campaign": self.name,
            "counts": self.counts(),
            "total": len(self.rows),
            "complete": self.complete,
            "done": self.done,
            "failed_attempts": self.failed_attempts,
            "skipped": self.skipped,
            "spend_usd": None if self.spend_usd is None else round(self.spend_usd, 6),
            "cells": [
                {k: v for k, v in vars(c).items() if k != "session_ids"} | {"sessions": c.session_ids} for c in self.cells()
            ],
            "units": [
                {
                    "key": r.unit.key,
                    "session": r.unit.session_id,
                    "model": r.unit.model.name,
                    "task": r.unit.task,
                    "guidance": r.unit.guidance,
                    "repetition": r.unit.repetition,
                    "kind": r.unit.kind,
                    "state": r.state,
                    "passed": r.status.passed,
                    "failed_attempt": r.status.attempt_failed,
                    "skipped": r.status.skipped,
                    "turns": r.status.turns,
                    "cost_usd": r.status.cost_usd,
                    "attempts": r.attempts,
                    "reason": r.gave_up or r.status.reason or None,
                    "device": r.status.device_name or None,
                    "judged": r.status.judged,
                }
                for r in self.rows
            ],
        }


def campaign_status(campaign: Campaign, units: list[Unit]) -> CampaignStatus:
    store = store_for(campaign)
    rows = []
    for unit in units:
        record = load_record(campaign, unit.key, unit.session_id, quarantine=False)
        rows.append(UnitRow(unit, unit_status(campaign, unit, store), len(record.attempts), record.gave_up))
    return CampaignStatus(campaign.name, rows, judged=campaign.spec.judge is not None)


__all__ = [
    "CampaignStatus",
    "Cell",
    "UnitRow",
    "campaign_status",
    "failed_attempts",
    "is_done",
    "skipped_units",
    "spend_of",
    "usd",
]
