"""The README's report tour end to end on this machine's CPU, with a scripted model on 127.0.0.1 in place of a
provider: what a new user sees from `campaign plan` to `report --figures`, with no key and no GPU.

A campaign (two tasks x unguided and L1+L2+L3 x two repetitions) runs the built-in agent against a fake
OpenAI Chat server (tests/llm/fake_servers.py, the real wire format) that behaves like a plausible model:
a guided session writes the task's straightforward solution and submits; an unguided one first writes a
kernel that fails, reads run_tests, then writes the solution (repetition 1) or gives up and submits the
failing revision (repetition 2). Then a session whose provider is unreachable (infrastructure: set aside,
never a result), one the user excludes, and the report in every form.

Usage: python scripts/report_tour.py OUT_DIR [--tasks muon_orthogonalize rmsnorm_bwd]
Writes OUT_DIR/{campaign.toml, sessions/, report.md, report.json, figures/, transcript.txt}; prints the
transcript. Exit 1 when a step fails where it should not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from llm.fake_servers import FakeModelServer, ModelTurn, ToolCall  # noqa: E402

KEY = "sk-report-tour-not-a-real-key"
USAGE = {"prompt_tokens": 6000, "completion_tokens": 700, "prompt_tokens_details": {"cached_tokens": 4000}}
BROKEN = "def run(*args, **kwargs):\n    raise NotImplementedError('a first try')\n"


class TourModel:
    """A model for sequential conversations: the task and whether it is guided from the brief (the first
    user message), the session's place among the sessions of that task and configuration
    from a counter (the campaign runs one session at a time: cpu_slots = 1)."""

    def __init__(self, tasks: list[str]) -> None:
        self.tasks = sorted(tasks, key=len, reverse=True)
        self.solutions = {t: _naive(t) for t in tasks}
        self.seen: dict[tuple[str, bool], int] = {}
        self.current: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: Any) -> ModelTurn:
        messages = body.get("messages", [])
        brief = json.dumps(next((m.get("content") for m in messages if m.get("role") == "user"), ""))
        task = next(t for t in self.tasks if t in brief)
        guided = "the expert design guidance is in" in brief
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        with self.lock:
            if turn == 0:
                self.seen[(task, guided)] = self.seen.get((task, guided), 0) + 1
                self.current[task] = self.seen[(task, guided)]
            nth = self.current[task]
        write = ToolCall("write_file", {"path": "solution.py", "content": self.solutions[task]})
        if guided:
            steps = [write, ToolCall("submit", {"note": "the design's first stage, straightforwardly"})]
        elif nth % 2 == 1:
            broken = ToolCall("write_file", {"path": "solution.py", "content": BROKEN})
            steps = [broken, ToolCall("run_tests", {}), write, ToolCall("submit", {"note": "fixed after run_tests"})]
        else:
            steps = [
                ToolCall("write_file", {"path": "solution.py", "content": BROKEN}),
                ToolCall("submit", {"note": "out of ideas"}),
            ]
        step = steps[min(turn, len(steps) - 1)]
        return ModelTurn(text=f"step {turn + 1}", tool_calls=[step], usage=USAGE, model="gpt-4.1")


def _naive(task: str) -> str:
    """The task's straightforward solution (tests/solutions/: muon's is muon_naive.py)."""
    folder = REPO / "tests" / "solutions"
    found = [folder / f"{task}_naive.py", folder / f"{task.split('_', maxsplit=1)[0]}_naive.py"]
    return next(p for p in found if p.is_file()).read_text(encoding="utf-8")


def campaign_file(path: Path, base_url: str, tasks: list[str]) -> Path:
    path.write_text(
        f'name = "tour"\nsessions_dir = "sessions"\ntasks = {json.dumps(tasks)}\nguidance = ["none", "L1+L2+L3"]\n'
        'repetitions = 2\nmax_turns = 8\nmax_usd = 2.0\ndevice = "cpu"\ncpu_slots = 1\nretries = 0\n\n'
        f'[[models]]\nprovider = "openai"\nmodel = "gpt-4.1"\nbase_url = "{base_url}"\n',
        encoding="utf-8",
    )
    return path


class Transcript:
    def __init__(self, out: Path) -> None:
        self.path = out / "transcript.txt"
        self.path.write_text("", encoding="utf-8")
        self.failures: list[str] = []

    def run(self, title: str, *args: str, expect: int | None = 0, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "workbench", *args],
            cwd=REPO, env={**os.environ, **(env or {}), "COLUMNS": "140"}, capture_output=True, text=True, check=False,
        )  # fmt: skip
        text = f"$ d2k-workbench {' '.join(args)}\n(exit {done.returncode})\n{done.stdout}{done.stderr}\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(f"## {title}\n{text}\n")
        print(f"## {title}\n{text}", flush=True)
        if expect is not None and done.returncode != expect:
            self.failures.append(f"{title}: exit {done.returncode}, expected {expect}")
        return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--tasks", nargs="+", default=["muon_orthogonalize", "rmsnorm_bwd"])
    options = parser.parse_args()
    out: Path = options.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sessions = out / "sessions"
    env = {"OPENAI_API_KEY": KEY, "D2K_SESSIONS_DIR": str(sessions)}
    log = Transcript(out)
    with FakeModelServer("openai-chat") as server:
        server.respond_with(TourModel(options.tasks))
        path = campaign_file(out / "campaign.toml", server.base_url, options.tasks)
        log.run("the plan", "campaign", "plan", str(path), env=env)
        log.run("the campaign", "campaign", "run", str(path), env=env)
        log.run("its status", "campaign", "status", str(path), expect=None, env=env)
    # the server is gone: a session that cannot reach its provider (infrastructure, never a result)
    dead = "http://127.0.0.1:9/v1"
    log.run("an unreachable provider", "run", options.tasks[0], "--provider", "openai", "--model", "gpt-4.1",
            "--base-url", dead, "--device", "cpu", "--max-turns", "4", expect=2, env=env)  # fmt: skip
    log.run("the sessions", "session", "list", env=env)
    excluded = next(iter(sorted(p.name for p in sessions.glob("tour--*--L1L2L3--r2"))), None)
    if excluded is not None:
        log.run(
            "a session excluded by hand", "session", "exclude", excluded, "--reason", "tour: excluded to show the note", env=env
        )
    figures = out / "figures"
    log.run("the report", "report", "--campaign", str(path), env=env)
    report = log.run("the report as Markdown", "report", str(sessions), "--format", "md", "--figures", str(figures), env=env)
    (out / "report.md").write_text(report, encoding="utf-8")
    as_json = log.run("the report as JSON", "report", str(sessions), "--format", "json", env=env)
    (out / "report.json").write_text(as_json, encoding="utf-8")
    for failure in log.failures:
        print(f"FAILED: {failure}")
    print(f"transcript: {log.path}; figures: {sorted(p.name for p in figures.glob('*.png'))}")
    return 1 if log.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
