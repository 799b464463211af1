"""A campaign's progress read from disk (its sessions and records): for `campaign status`, the TUI and
`campaign run`'s summary. Reading never changes anything, so it is safe while a run is going on."""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.campaign.plan import Unit
from workbench.campaign.records import load_record
from workbench.campaign.spec import Campaign
from workbench.campaign.work import UnitStatus, store_for, unit_status


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
    running: int = 0
    failed: int = 0
    spend_usd: float = 0.0
    session_ids: list[str] = field(default_factory=list)


@dataclass
class CampaignStatus:
    name: str
    rows: list[UnitRow]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.state] = out.get(row.state, 0) + 1
        return out

    @property
    def spend_usd(self) -> float:
        return sum(r.status.cost_usd or 0.0 for r in self.rows)

    @property
    def complete(self) -> bool:
        return all(r.state in ("finished", "judged", "gave_up") for r in self.rows)

    def cells(self) -> list[Cell]:
        cells: dict[tuple[str, str, str], Cell] = {}
        for row in self.rows:
            u = row.unit
            cell = cells.setdefault((u.model.name, u.guidance, u.kind), Cell(u.model.name, u.guidance, u.kind))
            cell.total += 1
            cell.done += row.state in ("finished", "judged")
            cell.passed += row.status.passed
            cell.running += row.state == "running"
            cell.failed += row.state in ("failed", "gave_up")
            cell.spend_usd += row.status.cost_usd or 0.0
            cell.session_ids.append(u.session_id)
        return list(cells.values())

    def to_json(self) -> dict[str, object]:
        return {
            "campaign": self.name,
            "counts": self.counts(),
            "total": len(self.rows),
            "complete": self.complete,
            "spend_usd": round(self.spend_usd, 6),
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
    return CampaignStatus(campaign.name, rows)


__all__ = ["CampaignStatus", "Cell", "UnitRow", "campaign_status"]
