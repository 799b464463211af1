"""A small campaign world for tests: three tiny Muon tasks, their guidance, a stateless scripted model
served on 127.0.0.1 through the real OpenAI Chat Completions wire format, and a campaign file."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from agent.test_design import valid_design
from llm.fake_servers import ModelTurn, ToolCall

from workbench import paths

REPO = paths.REPO_ROOT
HONEST = (REPO / "tests" / "solutions" / "muon_naive.py").read_text(encoding="utf-8")
TASK_IDS = ("muon_a", "muon_b", "muon_c")
USAGE = {"prompt_tokens": 3000, "completion_tokens": 400, "prompt_tokens_details": {"cached_tokens": 2000}}
KEY = "sk-campaign-test-0123456789abcdef"


def make_suite(tiny_tasks: Path, root: Path, ids: tuple[str, ...] = TASK_IDS) -> tuple[Path, Path]:
    """tasks/ and guidance/ roots holding copies of the tiny Muon task (one smoke workload) under `ids`."""
    tasks, guidance = root / "tasks", root / "guidance"
    for task_id in ids:
        shutil.copytree(tiny_tasks / "muon_orthogonalize", tasks / task_id, ignore=shutil.ignore_patterns("__pycache__"))
        toml = tasks / task_id / "task.toml"
        toml.write_text(toml.read_text().replace('id = "muon_orthogonalize"', f'id = "{task_id}"', 1))
        shutil.copytree(REPO / "guidance" / "muon_orthogonalize", guidance / task_id)
        for name in ("guidance.toml", "rubric.toml"):
            path = guidance / task_id / name
            path.write_text(path.read_text().replace('task = "muon_orthogonalize"', f'task = "{task_id}"', 1))
    return tasks, guidance


class CountingModel:
    """A stateless scripted model: turn N of any conversation (N = assistant messages so far) writes the honest
    kernel (N = 0) or submits (N = 1); a model not in `writers` submits at once with nothing written (a weak
    model: its session ends failing, after one evaluation of the template); offered `submit_design` (a design
    session), it submits a valid design at once. Counts requests per (model, conversation, turn): a turn
    asked twice is a duplicate model call."""

    def __init__(self, writers: frozenset[str] = frozenset({"gpt-4.1"}), delay_s: float = 0.0) -> None:
        self.writers = writers
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.asked: Counter[tuple[str, str, int]] = Counter()

    def __call__(self, body: Any) -> ModelTurn:
        messages = body.get("messages", []) if isinstance(body, dict) else []
        opening = json.dumps([m.get("content") for m in messages if m.get("role") in ("system", "user")][:2])
        conversation = hashlib.sha256(opening.encode()).hexdigest()[:12]
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        with self.lock:
            self.asked[(str(body.get("model")), conversation, turn)] += 1
        tools = {str(t.get("function", {}).get("name")) for t in body.get("tools", []) if isinstance(t, dict)}
        if "submit_design" in tools:
            call = ToolCall("submit_design", {"design": valid_design()})
        elif turn == 0 and str(body.get("model")) in self.writers:
            call = ToolCall("write_file", {"path": "solution.py", "content": HONEST})
        else:
            call = ToolCall("submit", {"note": "the straightforward kernels"})
        return ModelTurn(tool_calls=[call], usage=USAGE, delay_s=self.delay_s)

    def duplicates(self) -> dict[tuple[str, str, int], int]:
        with self.lock:
            return {k: n for k, n in self.asked.items() if n > 1}


def write_campaign(
    path: Path, base_url: str, *, name: str = "mini", cpu_slots: int = 2, extra: str = "", tasks: tuple[str, ...] = TASK_IDS
) -> Path:
    """2 models x 3 tasks (or `tasks`) x 2 guidance configurations on the CPU."""
    path.write_text(
        f"""name = "{name}"
sessions_dir = "sessions"
tasks = {json.dumps(list(tasks))}
guidance = ["none", "L1+L2+L3"]
max_turns = 6
max_usd = 1.0
device = "cpu"
cpu_slots = {cpu_slots}
retries = 1
{extra}
[[models]]
provider = "openai"
model = "gpt-4.1"
base_url = "{base_url}"

[[models]]
provider = "openai"
model = "local-coder"
label = "coder-7b"
base_url = "{base_url}"
price = {{ input = 0.2, output = 0.6 }}
"""
    )
    return path
