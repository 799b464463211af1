"""A scripted model for tests, demos and recorded examples: a `Provider` that answers from a script.

    provider = ScriptedProvider([
        turn(call("read_file", path="task/reference.py"), text="Reading the reference."),
        turn(call("write_file", path="solution.py", content=KERNEL)),
        turn(call("run_tests")),
        turn(call("submit", note="naive kernel")),
    ], usage=Usage(uncached_input=1200, output=300))
    driver = AgentDriver(provider, pricer=flat_pricer(0.01), catalog=catalog)  # or: Runner(agent=agent_driver(factory))

The reply to a call is the script's step number N, N being the number of assistant turns already in the
conversation: a resumed session (whose conversation is rebuilt from the log) continues the script where the
log left off, in a fresh process too. A step is an `AssistantTurn`, a `ProviderError` to raise, or a function
of the conversation returning either (to read tool results, e.g. a failing run_tests). Past the end of the
script, `then` answers (default: a non-retryable ProviderError). `failures={N: [errors]}` raises those
errors, one per call, before step N is answered (to test retries).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench import paths
from workbench.llm import AssistantTurn, Conversation, ModelReply, ProviderError, ToolCallRequest, ToolResultsTurn
from workbench.llm.prices import UnpricedModel
from workbench.llm.usage import Usage

Step = AssistantTurn | ProviderError | Callable[[Conversation], "AssistantTurn | ProviderError"]
_ids = itertools.count(1)


def call(name: str, raw: str | None = None, **arguments: Any) -> ToolCallRequest:
    """A tool call request; `raw` sends that text as the arguments instead (None arguments when not a JSON object)."""
    if raw is not None:
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        return ToolCallRequest(
            id=f"call_{next(_ids)}", name=name, raw_arguments=raw, arguments=parsed if isinstance(parsed, dict) else None
        )
    return ToolCallRequest(id=f"call_{next(_ids)}", name=name, raw_arguments=json.dumps(arguments), arguments=arguments)


def turn(*calls: ToolCallRequest, text: str = "") -> AssistantTurn:
    """An assistant turn with these tool calls (none: a text-only reply)."""
    return AssistantTurn(text=text, tool_calls=list(calls), provider="scripted")


def last_results(conversation: Conversation) -> list[str]:
    """The contents of the tool results the model is answering (empty after a text reply)."""
    last = conversation.messages[-1] if conversation.messages else None
    return [r.content for r in last.results] if isinstance(last, ToolResultsTurn) else []


class ScriptedProvider:
    """A Provider that replies from a script (see the module's docstring). `calls` counts the calls made."""

    name = "scripted"

    def __init__(
        self,
        steps: Sequence[Step],
        *,
        model: str = "scripted-model",
        usage: Usage | None = None,
        then: Step | None = None,
        failures: Mapping[int, Sequence[ProviderError]] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        self.steps = list(steps)
        self.model = model
        self.usage = usage or Usage(uncached_input=1000, cache_read=0, output=200)
        self.then = then
        self.failures = {index: list(errors) for index, errors in (failures or {}).items()}
        self.delay_s = delay_s
        self.calls = 0
        self.seen: list[Conversation] = []
        self._lock = threading.Lock()

    def complete(self, conversation: Conversation) -> ModelReply:
        with self._lock:
            self.calls += 1
            self.seen.append(conversation.model_copy(deep=True))
            index = sum(1 for m in conversation.messages if isinstance(m, AssistantTurn))
            pending = self.failures.get(index)
            if pending:
                raise pending.pop(0)
        if self.delay_s:
            time.sleep(self.delay_s)
        step = self.steps[index] if index < len(self.steps) else self.then
        if step is None:
            raise ProviderError(f"the script has no step {index + 1} (it has {len(self.steps)})", retryable=False)
        if callable(step) and not isinstance(step, AssistantTurn | ProviderError):
            step = step(conversation)
        if isinstance(step, ProviderError):
            raise step
        return ModelReply(
            turn=step.model_copy(deep=True),
            usage=self.usage,
            model=self.model,
            stop_reason="tool_use" if step.tool_calls else "end_turn",
            request_id=f"scripted-{index + 1}",
        )


def flat_pricer(usd_per_call: float, model: str = "scripted-model") -> Callable[[str, Usage], float]:
    """A price table with one model that costs the same for every call (for budget tests)."""

    def price(name: str, usage: Usage) -> float:
        if name != model:
            raise UnpricedModel(f"no price for model {name!r}")
        return usd_per_call if usage != Usage() else 0.0

    return price


# ---- the honest Muon session the tests and the shipped example use --------------------------------

MUON_NAIVE = paths.REPO_ROOT / "tests" / "solutions" / "muon_naive.py"
MUON_MISSING_MARGIN = paths.REPO_ROOT / "sessions" / "examples" / "_recording" / "muon_honest" / "rev2_missing_margin.py"


def muon_script(wrong: str | None = None, honest: str | None = None) -> list[Step]:
    """A short, honest agent session on muon_orthogonalize: read the task, write a kernel that forgets the
    normalisation margin, read the failing run_tests, write the straightforward Triton solution
    (tests/solutions/muon_naive.py), check it and submit. `wrong`/`honest`: other texts for the two kernels."""
    wrong_text = wrong if wrong is not None else MUON_MISSING_MARGIN.read_text(encoding="utf-8")
    honest_text = honest if honest is not None else MUON_NAIVE.read_text(encoding="utf-8")

    def after_failure(conversation: Conversation) -> AssistantTurn:
        if "every workload is within the tolerance" in " ".join(last_results(conversation)):
            return turn(call("submit", note="the first kernel passed"), text="It passed; submitting.")
        return turn(
            call("write_file", path="solution.py", content=honest_text),
            text="The error is above the bound: the normalisation must divide by ||G||_F * 1.01 + 1e-7 as the reference "
            "does. Rewriting with the margin, sum-of-squares partials and batched GEMM kernels.",
        )

    def after_check(conversation: Conversation) -> AssistantTurn:
        results = " ".join(last_results(conversation))
        if "every workload is within the tolerance" in results:
            return turn(call("submit", note="straightforward Triton solution: 15 batched GEMM launches"), text="All passed.")
        return turn(call("submit", note="could not make it pass"), text="It still fails; submitting what I have.")

    return [
        turn(call("list_files"), text="Let me look at the workspace first."),
        turn(call("read_file", path="task/reference.py"), call("read_file", path="solution.py"), text="Reading the reference."),
        turn(
            call("write_file", path="solution.py", content=wrong_text),
            text="Plan: normalise each matrix by its Frobenius norm, then five steps of A = X X^T, B = bA + cA^2, "
            "X = aX + BX with Triton GEMM kernels.",
        ),
        turn(call("run_tests"), text="Checking correctness."),
        after_failure,
        turn(call("run_tests"), text="Checking the fix."),
        after_check,
    ]
