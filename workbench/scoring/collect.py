"""Sessions -> `SessionRecord`s: find session folders under the paths given, and read what each contributes.

    records = collect([Path("sessions/"), Path("runs/gpt-6")])     # folders of sessions, or session folders
    record = read_session(Path("sessions/20261130-...-ab12"))

A session folder holds `session.toml`; a folder of sessions is searched for them (not inside a session,
nor in hidden folders, at most MAX_DEPTH levels down). A name that is no folder is tried as a session id of
the store (its root and the shipped examples).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workbench.errors import UsageError, WorkbenchError
from workbench.judge.scores import judgements
from workbench.llm.usage import Spend
from workbench.scoring.records import Group, JudgeRecord, RevisionRecord, SessionRecord, WorkloadRecord
from workbench.session.config import CONFIG_NAME, load_config
from workbench.session.eventlog import read_log
from workbench.session.events import Event, ModelCall, Revision
from workbench.session.layout import LOG_NAME
from workbench.session.state import SessionState, select_submission
from workbench.session.store import SessionNotFound, SessionStore

MAX_DEPTH = 3  # how deep a folder of sessions is searched (sessions/, sessions/examples/, runs/<model>/<config>/)


def is_session_dir(path: Path) -> bool:
    return path.is_dir() and (path / CONFIG_NAME).is_file()


def _scan(folder: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return found
    for child in children:
        if not child.is_dir() or child.name.startswith("."):
            continue
        if is_session_dir(child):
            found.append(child)
        elif depth > 1:
            found += _scan(child, depth - 1)
    return found


def find_sessions(paths: Sequence[Path | str], store: SessionStore | None = None) -> list[Path]:
    """Session folders named by `paths` (session folders, folders of sessions, or session ids of `store`),
    in the order given, each once. UsageError for a path that is neither, or when nothing is found."""
    found: list[Path] = []
    for item in paths:
        path = Path(item)
        if is_session_dir(path):
            found.append(path)
        elif path.is_dir():
            inside = _scan(path, MAX_DEPTH)
            if not inside:
                raise UsageError(f"{path} is not a session (no {CONFIG_NAME}) and holds no sessions")
            found += inside
        elif path.exists():
            raise UsageError(f"{path} is not a session or a folder of sessions")
        elif store is not None and "/" not in str(item):
            try:
                found.append(store.resolve(str(item)).dir)
            except SessionNotFound as exc:
                raise UsageError(f"{item}: no such folder, and {exc.message}") from None
        else:
            raise UsageError(f"{path}: no such session or folder of sessions")
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    if not unique:
        raise UsageError("no sessions found" + (f" in {', '.join(str(p) for p in paths)}" if paths else ""))
    return list(unique.values())


def is_shipped_example(path: Path, store: SessionStore) -> bool:
    """Whether `path` is (in) the store's shipped examples folder."""
    return store.examples is not None and path.resolve().is_relative_to(store.examples.resolve())


def names_examples(named: Sequence[Path | str], store: SessionStore) -> bool:
    """Whether a command line names the shipped examples themselves (their folder, or one of them by path or
    id): asked for by name, they are counted."""
    for item in named:
        path = Path(item)
        if path.exists():
            if is_shipped_example(path, store):
                return True
            continue
        try:
            if store.resolve(str(item)).read_only:
                return True
        except WorkbenchError:
            continue
    return False


def without_examples(
    folders: Sequence[Path], named: Sequence[Path | str], store: SessionStore, examples: bool
) -> tuple[list[Path], int]:
    """The one rule of the commands that count sessions (`report`, `judge agreement`): the shipped examples
    are left out unless asked for (`examples`, the commands' --examples) or named on the command line, even
    when a folder named holds them (the sessions root holds sessions/examples/). Returns the folders kept and
    how many were left out. UsageError when only examples were found."""
    if examples or store.examples is None or names_examples(named, store):
        return list(folders), 0
    kept = [folder for folder in folders if not is_shipped_example(folder, store)]
    if not kept:
        raise UsageError("only shipped example sessions were found; --examples counts them")
    return kept, len(folders) - len(kept)


def _model_of(events: Sequence[Event]) -> str | None:
    models = Counter(e.model for e in events if isinstance(e, ModelCall) and e.model)
    return models.most_common(1)[0][0] if models else None


def _tokens(events: Iterable[Event]) -> Spend:
    return sum((Spend.of_call(e.usage, e.cost_usd) for e in events if isinstance(e, ModelCall)), Spend())


def _judgements(events: Sequence[Event], notes: list[str]) -> list[JudgeRecord]:
    """Per (kind, revision) judged or reviewed: the effective scores (workbench.judge.scores: the latest
    review of a level, else the judge's valid score), which levels a reviewer set, and the judging model."""
    found = judgements(events)
    notes += [f"{problem} (ignored)" for problem in found.skipped]
    return [
        JudgeRecord(
            kind=kind,
            rev=rev,
            levels=judgement.levels(),
            reviewed=sorted({review.level for _, review in judgement.reviews}),
            judge=judgement.verdict.judge if judgement.verdict is not None else "",
        )
        for (kind, rev), judgement in sorted(found.items(), key=lambda item: (item[0][1], item[0][0]))
    ]


def read_session(path: Path) -> SessionRecord:
    """One session folder -> its record. ConfigError (a WorkbenchError) when session.toml cannot be read."""
    config = load_config(path)
    contents = read_log(path / LOG_NAME)
    events = contents.events
    state = SessionState.from_events(events)
    notes = [f"log line {b.line}: {b.message} (ignored)" for b in contents.bad_lines]
    has_calls = any(isinstance(e, ModelCall) for e in events)
    step_of: dict[int, int] = {}
    turn = 0
    for event in events:
        if isinstance(event, ModelCall):
            turn = max(turn, event.turn)
        elif isinstance(event, Revision):
            step_of.setdefault(event.rev, turn if has_calls else event.rev)
    revisions = [
        RevisionRecord(
            rev=r.rev,
            step=step_of.get(r.rev, r.rev),
            status=r.status,
            device_name=r.report.device_name if r.report is not None else "",
            harness_version=r.harness_version,
            workloads=[
                WorkloadRecord(
                    name=w.name, status=w.status, latency_ms=w.latency_ms, reference_ms=w.reference_ms, library_ms=w.library_ms
                )
                for w in (r.report.workloads if r.report is not None else [])
            ],
        )
        for r in state.ordered()
    ]
    if state.submission is not None:
        submission_rev = state.submission.rev
    else:
        chosen, _ = select_submission(state.ordered())
        submission_rev = chosen.rev if chosen is not None else None
    mode = "design" if config.design_mode else "code"
    agent = config.agent
    return SessionRecord(
        id=config.id,
        path=str(path),
        task=config.task,
        guidance=config.guidance,
        group=Group(
            driver=config.driver,
            provider=agent.provider if agent is not None else None,
            model=(agent.model or _model_of(events)) if agent is not None else None,
            command=config.command,
            from_session=config.from_session,
        ),
        mode=mode,
        device=config.device,
        created=config.created,
        finished=state.finished is not None,
        axis="turn" if has_calls else "revision",
        steps=turn if has_calls else len(revisions),
        revisions=revisions,
        submission_rev=submission_rev,
        tokens=_tokens(events),
        verdicts=_judgements(events, notes),
        notes=notes,
        outcome=state.outcome,
        outcome_reason=state.driver_finished.reason if state.driver_finished is not None else "",
        excluded=state.excluded.reason if state.excluded is not None else None,
        repetition=config.repetition or _repetition_in_id(config.id),
        imported_from=config.imported_from,
    )


# A campaign names its sessions "<model>--<task>--<config>--r<N>[--design]" (campaign/plan.py); sessions made
# before session.toml recorded the repetition are read by their name.
_REPETITION_IN_ID = re.compile(r"--r(\d+)(?:--[a-z]+)?$")


def _repetition_in_id(session_id: str) -> int:
    found = _REPETITION_IN_ID.search(session_id)
    return int(found.group(1)) if found else 1


@dataclass
class Collected:
    """Records read, and the sessions that could not be read (path, why) when reading was not strict."""

    records: list[SessionRecord]
    problems: list[tuple[Path, str]] = field(default_factory=list)


def collect(paths: Sequence[Path | str], store: SessionStore | None = None, *, strict: bool = True) -> Collected:
    """Every session under `paths` read into a record. strict: a session that cannot be read is a UsageError
    naming it; otherwise it is listed in `problems` and left out."""
    collected = Collected([])
    for path in find_sessions(paths, store):
        try:
            collected.records.append(read_session(path))
        except WorkbenchError as exc:
            if strict:
                raise UsageError(f"cannot read session {path}: {exc.message}") from None
            collected.problems.append((path, exc.message))
    return collected
