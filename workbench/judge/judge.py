"""One verdict: ask the model, verify its reply by code, re-ask with the exact errors, record the outcome.

    verdict = run_judge(provider, judge_input)          # -> VerdictRecord (not yet written anywhere)
    verdict = zero_verdict(kind, rev, sha, file, status)  # a revision that failed the harness: no model call

The first call sends the system message and the filled user template. Its reply is parsed (the first JSON
object of the text; a Markdown fence is tolerated) and each level validated (`JudgeReply`'s pydantic models)
and verified (`verify.py`). A level that passes is kept as it is. While levels fail and re-asks remain
(`max_reasks`, default 2), the model gets its previous reply back and one user message listing every error of
the failing levels (or why the reply could not be read at all), and is asked for the whole JSON again; only
the failing levels are taken from the new reply. A level still failing is recorded invalid (`score` None,
`invalid` True, its last errors) and the verdict is incomplete. Transient API failures are retried inside one
call (`workbench.llm.call_with_retries`); a provider failing for good raises `ProviderError` and nothing is
recorded.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from workbench.judge.prompt import JudgeInput
from workbench.judge.providers import JudgeProvider
from workbench.judge.verdict import (
    LEVELS,
    CitationCheck,
    Level,
    LevelReply,
    LevelVerdict,
    ModelCallRecord,
    Reask,
    VerdictKind,
    VerdictRecord,
)
from workbench.judge.verify import CitedText, check_level
from workbench.llm import (
    Conversation,
    Provider,
    ProviderError,
    RetryPolicy,
    UnpricedModel,
    UserTurn,
    call_with_retries,
    cost_usd,
)
from workbench.llm.usage import Usage

MAX_REASKS = 2
Progress = Callable[[str], None]
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


class MalformedReply(ValueError):
    """A reply that is not one JSON object with a `levels` object."""


def _no_progress(_: str) -> None:
    pass


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object of a reply: the whole text, or inside a Markdown fence, or from its first `{` to its
    last `}`. MalformedReply says what is wrong."""
    stripped = text.strip()
    if not stripped:
        raise MalformedReply("the reply is empty")
    fenced = _FENCE.match(stripped)
    candidates = [fenced.group(1)] if fenced else [stripped]
    first, last = stripped.find("{"), stripped.rfind("}")
    if first != -1 and last > first:
        candidates.append(stripped[first : last + 1])
    error: ValueError | None = None
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError as exc:
            error = error or exc
            continue
        if not isinstance(value, dict):
            raise MalformedReply(f"the reply is JSON but not an object (got {type(value).__name__})")
        return value
    raise MalformedReply(f"the reply is not valid JSON: {error}")


def parse_levels(text: str) -> dict[Level, LevelReply | list[str]]:
    """Per level, its validated reply or the schema errors of that level. MalformedReply when the reply has
    no readable `levels` object at all."""
    data = extract_json(text)
    levels = data.get("levels", data if any(level in data for level in LEVELS) else None)
    if not isinstance(levels, dict):
        raise MalformedReply('the reply has no "levels" object with "L1", "L2" and "L3"')
    parsed: dict[Level, LevelReply | list[str]] = {}
    for level in LEVELS:
        raw = levels.get(level)
        if raw is None:
            parsed[level] = [f'{level}: missing from "levels"']
            continue
        try:
            parsed[level] = LevelReply.model_validate(raw)
        except ValidationError as exc:
            parsed[level] = [
                f"{level}.{'.'.join(str(p) for p in error['loc'])}: {error['msg']}".rstrip(".")
                if error["loc"]
                else f"{level}: {error['msg']}"
                for error in exc.errors(include_url=False)
            ]
    return parsed


def reask_message(failing: dict[Level, list[str]], malformed: str | None, kept: list[Level], attempt: int, left: int) -> str:
    """The user message of a re-ask: the exact errors, what is kept, what to send."""
    lines = [f"Your reply (answer {attempt}) could not be accepted."]
    if malformed is not None:
        lines += ["", f"It could not be read: {malformed}."]
    else:
        lines += ["", "These checks failed:"]
        for level, errors in failing.items():
            lines += [f"- {error}" for error in errors] or [f"- {level}: invalid"]
    if kept:
        one = len(kept) == 1
        lines += ["", f"{', '.join(kept)} verified and {'is' if one else 'are'} kept as you gave {'it' if one else 'them'}."]
    lines += [
        "",
        f"Send the complete JSON object again, with {', '.join(failing)} corrected: each citation's lines must exist, "
        "hold executable source (for a design: its content) and its quote must be exactly the text of those lines "
        "(without the `NUMBER | ` prefix). "
        + (
            f"{left} more answer{'s' if left != 1 else ''} can be checked after this one."
            if left
            else "This is the last answer checked."
        ),
    ]
    return "\n".join(lines)


def _call_cost(model: str, usage: Usage) -> float | None:
    try:
        return cost_usd(model, usage)
    except UnpricedModel:
        return None


def _retry_reporter(retries: list[int], progress: Progress) -> Callable[[int, float, ProviderError], None]:
    def on_retry(retry: int, wait_s: float, error: ProviderError) -> None:
        retries.append(retry)
        progress(f"retry {retry} in {wait_s:.1f} s: {error.message}")

    return on_retry


def js_of(levels: dict[Level, LevelVerdict]) -> float | None:
    """The mean of the three levels' scores, only when all three are valid."""
    scores = [levels[level].usable_score if level in levels else None for level in LEVELS]
    if any(score is None for score in scores):
        return None
    return sum(score for score in scores if score is not None) / len(LEVELS)


def run_judge(
    provider: Provider,
    judge_input: JudgeInput,
    *,
    max_reasks: int = MAX_REASKS,
    temperature: float | None = None,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    progress: Progress = _no_progress,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> VerdictRecord:
    """Judge `judge_input` with `provider` (see the module's docstring). `temperature` is only recorded here
    (default: the provider's `temperature` attribute): the provider sends it (`make_judge_provider`). Raises
    ProviderError when a call fails for good."""
    cited = CitedText(
        judge_input.file,
        judge_input.text,
        python=judge_input.kind == "impl",
        hidden=tuple((h.first, h.last, h.name) for h in judge_input.hidden),
    )
    conversation = Conversation(system=judge_input.system, messages=[UserTurn(text=judge_input.user)])
    accepted: dict[Level, LevelVerdict] = {}
    failing: dict[Level, list[str]] = {}
    last_proposed: dict[Level, LevelReply] = {}
    last_checks: dict[Level, list[CitationCheck]] = {}
    calls: list[ModelCallRecord] = []
    reasks: list[Reask] = []
    attempts = max_reasks + 1
    asked = provider.for_criteria(judge_input.criteria) if isinstance(provider, JudgeProvider) else provider
    for attempt in range(1, attempts + 1):
        progress(f"asking {provider.name} {provider.model} (answer {attempt} of at most {attempts})")
        retries: list[int] = []
        started = time.monotonic()
        reply = call_with_retries(
            lambda: asked.complete(conversation), policy or RetryPolicy(), _retry_reporter(retries, progress), sleep
        )
        latency = time.monotonic() - started
        calls.append(
            ModelCallRecord(
                attempt=attempt,
                model=reply.model or provider.model,
                usage=reply.usage,
                cost_usd=_call_cost(provider.model, reply.usage),
                latency_s=round(latency, 3),
                stop_reason=reply.stop_reason,
                request_id=reply.request_id,
                retries=len(retries),
            )
        )
        pending = [level for level in LEVELS if level not in accepted]
        malformed: str | None = None
        try:
            parsed = parse_levels(reply.turn.text)
        except MalformedReply as exc:
            malformed = str(exc)
            failing = {level: [f"{level}: {malformed}"] for level in pending}
        else:
            failing = {}
            for level in pending:
                found = parsed[level]
                if isinstance(found, list):
                    failing[level] = found
                    continue
                checks, errors = check_level(found, cited, judge_input.criteria[level], level)
                last_proposed[level], last_checks[level] = found, checks
                if errors:
                    failing[level] = errors
                    continue
                accepted[level] = LevelVerdict(
                    score=found.score,
                    rationale=found.rationale,
                    realized=found.realized,
                    partial=found.partial,
                    missing=found.missing,
                    citations=found.citations,
                    verification=checks,
                    attempt=attempt,
                )
        verified = [level for level in pending if level in accepted]
        if verified:
            progress(f"verified: {', '.join(verified)}")
        if not failing:
            break
        if attempt == attempts:
            progress(f"still failing after {max_reasks} re-ask(s): {', '.join(failing)}")
            break
        flat = [error for errors in failing.values() for error in errors]
        progress(f"re-asking ({'unreadable reply' if malformed else f'{len(flat)} error(s) in ' + ', '.join(failing)})")
        reasks.append(
            Reask(attempt=attempt + 1, reason="malformed" if malformed else "verification", levels=list(failing), errors=flat)
        )
        kept = [level for level in LEVELS if level in accepted]
        message = reask_message(failing, malformed, kept, attempt, attempts - attempt - 1)
        conversation.messages += [reply.turn, UserTurn(text=message)]

    levels: dict[Level, LevelVerdict] = {}
    for level in LEVELS:
        if level in accepted:
            levels[level] = accepted[level]
            continue
        proposed = last_proposed.get(level)
        levels[level] = LevelVerdict(
            score=None,
            valid=False,
            invalid=True,
            errors=failing.get(level, [f"{level}: no valid answer"]),
            proposed_score=proposed.score if proposed else None,
            rationale=proposed.rationale if proposed else "",
            realized=proposed.realized if proposed else [],
            partial=proposed.partial if proposed else [],
            missing=proposed.missing if proposed else [],
            citations=proposed.citations if proposed else [],
            verification=last_checks.get(level, []),
            attempt=len(calls),
        )
    usage = Usage()
    for call in calls:
        usage = usage + call.usage
    costs = [call.cost_usd for call in calls]
    return VerdictRecord(
        kind=judge_input.kind,
        judge=provider.model,
        provider=provider.name,
        model=calls[-1].model if calls else "",
        rev=judge_input.rev,
        sha=judge_input.sha,
        file=judge_input.file,
        revision_status="passed" if judge_input.kind == "impl" else None,
        prompt_hash=judge_input.prompt_hash,
        input_hash=judge_input.input_hash,
        templates=list(judge_input.templates),
        temperature=temperature if temperature is not None else getattr(provider, "temperature", None),
        max_reasks=max_reasks,
        levels=levels,
        complete=all(levels[level].valid for level in LEVELS),
        js=js_of(levels),
        usage=usage,
        cost_usd=None if any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 6),
        calls=calls,
        reasks=reasks,
        time=clock(),
    )


def zero_verdict(
    kind: VerdictKind,
    rev: int,
    sha: str,
    file: str,
    status: str | None,
    *,
    note: str = "",
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> VerdictRecord:
    """A revision that did not pass the harness (or a session that ended with nothing to judge, `note` saying
    why): 0 at every level, recorded without asking any model."""
    note = note or f"revision {rev} did not pass the harness ({status}): 0 at every level; no model was asked"
    levels = {level: LevelVerdict(score=0.0, rationale=note) for level in LEVELS}
    return VerdictRecord(
        kind=kind,
        judge="",
        provider="",
        rev=rev,
        sha=sha,
        file=file,
        revision_status=status,
        model_called=False,
        note=note,
        levels=levels,
        complete=True,
        js=0.0,
        time=clock(),
    )
