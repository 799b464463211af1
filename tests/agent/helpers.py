"""Agent sessions through the real runner: a scripted model, and a fake evaluator where the kernel's result
does not matter (a real CPU evaluation takes seconds; those tests are marked slow)."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, TypeVar

from workbench import paths
from workbench.agent import AgentDriver
from workbench.catalog import Catalog
from workbench.harness.protocol.report import EvalReport
from workbench.llm import Provider
from workbench.session.config import AgentConfig
from workbench.session.create import create_session
from workbench.session.events import Event
from workbench.session.layout import SessionRef
from workbench.session.runner import Runner, RunResult
from workbench.session.store import SessionStore
from workbench.session.testing import timed_report

CATALOG = Catalog(paths.tasks_root(paths.REPO_ROOT / "tasks"), paths.guidance_root(paths.REPO_ROOT / "guidance"))
TASK = "muon_orthogonalize"
MARK = re.compile(r"# fake: (\w+) ([\d.]+) ms")


def solution(status: str, ms: float) -> str:
    """A solution the fake evaluator reports as `status` with latency `ms` (reference: 4 ms)."""
    return f"# fake: {status} {ms} ms\ndef run(G, steps):\n    return G\n"


class FakeEvaluator:
    """Reports what the solution's first line asks for; anything else (the template) is a runtime error."""

    def __init__(self, device: str = "cpu", hold: threading.Event | None = None) -> None:
        self.device = device
        self.seen: list[str] = []
        self.hold = hold  # when given, every evaluation waits for it

    def __call__(self, path: Path) -> EvalReport:
        text = path.read_text(encoding="utf-8")
        self.seen.append(text)
        if self.hold is not None:
            self.hold.wait(30)
        found = MARK.search(text)
        if found is None:
            return EvalReport(
                task=TASK, solution=str(path), device=self.device, status="runtime_error", message="NotImplementedError"
            )
        timings = {"w1": (float(found.group(2)), 4.0)}
        report = timed_report(TASK, timings, status=found.group(1), device=self.device, duration_s=0.01)  # type: ignore[arg-type]
        if self.device == "cpu":  # no timing on the CPU
            for w in report.workloads:
                w.latency = w.reference = None
        return report


def agent_session(store: SessionStore, **options: Any) -> SessionRef:
    """An agent session of the scripted model; `options`: AgentConfig's fields (`agent_mode` for its mode)
    and create_session's (device, workloads, guidance)."""
    fields: dict[str, Any] = {"provider": "openai", "model": "scripted-model", "allow_unpriced": True}
    session: dict[str, Any] = {"device": "cpu"}
    for name, value in options.items():
        if name == "agent_mode":
            fields["mode"] = value
        elif name in AgentConfig.model_fields:
            fields[name] = value
        else:
            session[name] = value
    return create_session(store, CATALOG, TASK, driver=AgentConfig(**fields), **session)


def run_agent(
    store: SessionStore,
    ref: SessionRef,
    provider: Provider,
    evaluator: FakeEvaluator | None = None,
    seen: list[Event] | None = None,
    harness: bool = False,
    **driver: Any,
) -> RunResult:
    """Run the session with the agent driver; `harness`: evaluate with the real harness, else `evaluator`
    (default: a FakeEvaluator)."""
    driver.setdefault("sleep", lambda seconds: None)
    agent = AgentDriver(provider, catalog=CATALOG, **driver)
    fake = None if harness else evaluator or FakeEvaluator()
    on_event = seen.append if seen is not None else None
    runner = Runner(store, ref, CATALOG, driver=agent, evaluator=fake, on_event=on_event, poll_s=0.2)
    return runner.run()


E = TypeVar("E", bound=Event)


def of(events: list[Event], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]
