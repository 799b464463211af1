"""The campaign's own records: per unit, the attempts made at it (when, where, on which GPU, how it ended
and why). Kept beside the sessions (`<sessions_dir>/.campaign-<name>/<unit key>.json`), written whole and
atomically by the coordinator after every job, so a killed coordinator loses at most the attempt it was
recording; the sessions themselves remain the truth about what was done."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from workbench.campaign.spec import Campaign


class Attempt(BaseModel):
    step: str  # run or judge
    started: float
    ended: float
    host: str
    gpu: str
    returncode: int
    state: str  # the unit's state afterwards (finished, failed, interrupted, ...)
    reason: str = ""


class UnitRecord(BaseModel):
    key: str
    session_id: str
    attempts: list[Attempt] = Field(default_factory=list)
    gave_up: str | None = None  # why the unit is no longer retried
    counted_from: int = 0  # attempts before this index no longer count against `retries` (--retry-failed)

    def failures(self, step: str) -> int:
        """Attempts at `step` that did not reach its goal (run: a finished session; judge: a verdict)."""
        goal = ("finished", "judged") if step == "run" else ("judged",)
        return sum(1 for a in self.attempts[self.counted_from :] if a.step == step and a.state not in goal)

    def retry(self) -> None:
        """Give a unit that was given up its retries again (its attempts so far are kept)."""
        self.gave_up = None
        self.counted_from = len(self.attempts)


def record_path(campaign: Campaign, key: str) -> Path:
    return campaign.state_dir / f"{key}.json"


def load_record(campaign: Campaign, key: str, session_id: str, quarantine: bool = True) -> UnitRecord:
    """The unit's record (empty when none yet). A torn or foreign file starts the history again; with
    `quarantine` it is moved aside to `<key>.json.bad` (readers that must not write pass False)."""
    path = record_path(campaign, key)
    try:
        return UnitRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return UnitRecord(key=key, session_id=session_id)
    except ValueError:
        if quarantine:
            path.replace(path.with_suffix(".json.bad"))
        return UnitRecord(key=key, session_id=session_id)


def save_record(campaign: Campaign, record: UnitRecord) -> None:
    path = record_path(campaign, record.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{record.key}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(record.model_dump(mode="json"), indent=1))
        handle.flush()
        os.fsync(handle.fileno())
    Path(tmp).replace(path)


__all__ = ["Attempt", "UnitRecord", "load_record", "record_path", "save_record"]
