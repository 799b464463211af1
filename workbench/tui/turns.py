"""What an agent session's log says about its model: turns, tool calls and their results, tokens and cost.

Pure functions and small data classes over events (no Textual, no files), so that the session view, the
sessions table and the tests compute the same figures:

- `AgentUsage`: model calls (turns), tokens by bucket, cost so far (None costs counted as unpriced calls),
  retries and tool calls; `UsageIndex` gives it as of any position of a log (the view's stepping position).
- `TranscriptBuilder`: the transcript's entries, one per model turn, retry, tool call, tool result or
  notable session event; each with its short lines and, where there is more, its full lines.
- Formatters: `format_tokens`, `format_usd`, `compact_arguments`, `usage_text`.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field, replace

from rich.text import Text

from workbench.llm.usage import Spend
from workbench.session.events import (
    DriverOutput,
    Error,
    EvalFinished,
    EvalStarted,
    Event,
    ModelCall,
    ModelRetry,
    Revision,
    Submission,
    ToolCall,
    ToolResult,
)
from workbench.session.format import event_summary, one_line, status_style

AGENT_EVENTS = (ModelCall, ModelRetry, ToolCall, ToolResult)
SHORT_LINES = 3  # lines of a model's text or a tool's result shown before the entry is expanded
LONG_STRING = 60  # a string argument longer than this (or of several lines) is shown by its size
LINE_LIMIT = 200  # characters of one transcript line; the rest is cut with an ellipsis
TOKEN_BUCKETS = (
    ("uncached_input", "in"),
    ("cache_read", "cache read"),
    ("cache_write", "cache write"),
    ("output", "out"),
    ("reasoning", "reasoning"),
)


# ---- numbers -------------------------------------------------------------------------------------------


def format_tokens(count: int) -> str:
    """Tokens as a person reads them: exact below 100,000 ("12,345"), else "123.5k" or "1.23M"."""
    if count < 100_000:
        return f"{count:,}"
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def format_usd(value: float) -> str:
    """Dollars: four decimals below $1 ("$0.0123"), two from $1 ("$12.34")."""
    return f"${value:.4f}" if abs(value) < 1 else f"${value:,.2f}"


@dataclass(frozen=True)
class AgentUsage:
    """What the model calls among some events add up to."""

    spend: Spend = field(default_factory=Spend)  # tokens, calls and cost of the model calls (llm.usage: the one sum)
    retries: int = 0
    tool_calls: int = 0
    tool_errors: int = 0  # results with ok false

    @property
    def turns(self) -> int:
        """Model calls."""
        return self.spend.calls

    @property
    def cost_usd(self) -> float:
        """The sum of the calls' cost_usd (calls with none add nothing)."""
        return self.spend.cost_usd

    @property
    def unpriced(self) -> int:
        """Calls with cost_usd None (a model missing from the price table)."""
        return self.spend.unpriced_calls

    def add(self, event: Event) -> AgentUsage:
        """This usage with one more event counted (events other than the agent's leave it as it is)."""
        if isinstance(event, ModelCall):
            return replace(self, spend=self.spend + Spend.of_call(event.usage, event.cost_usd))
        if isinstance(event, ModelRetry):
            return replace(self, retries=self.retries + 1)
        if isinstance(event, ToolCall):
            return replace(self, tool_calls=self.tool_calls + 1)
        if isinstance(event, ToolResult) and not event.ok:
            return replace(self, tool_errors=self.tool_errors + 1)
        return self

    @classmethod
    def of(cls, events: list[Event]) -> AgentUsage:
        usage = cls()
        for event in events:
            usage = usage.add(event)
        return usage

    def tokens(self) -> dict[str, int]:
        """Tokens by bucket, in TOKEN_BUCKETS order."""
        return {name: getattr(self.spend, name) for name, _ in TOKEN_BUCKETS}

    @property
    def priced(self) -> bool:
        """Some call had a price."""
        return self.turns > self.unpriced

    def cost_text(self) -> str:
        """ "$0.0123"; "unpriced" when no call had a price; "$0.0123 + 2 calls unpriced" when some had none."""
        if self.turns and not self.priced:
            return "unpriced"
        text = format_usd(self.cost_usd)
        if self.unpriced:
            text += f" + {self.unpriced} call{'s' if self.unpriced != 1 else ''} unpriced"
        return text

    def cost_cell(self) -> str:
        """The sessions table's cost: "-" before the first call, "unpriced", "$0.0123", or "≥$0.0123" when
        some calls had no price."""
        if not self.turns:
            return "-"
        if not self.priced:
            return "unpriced"
        return ("≥" if self.unpriced else "") + format_usd(self.cost_usd)


def usage_text(usage: AgentUsage, max_turns: int | None) -> Text:
    """The session view's status, two lines: turns used of the budget, cost so far, tool calls and retries;
    then tokens by bucket."""
    text = Text()
    text.append(f"turns {usage.turns}" + (f"/{max_turns}" if max_turns is not None else ""), style="bold")
    text.append(" · cost ", style="dim")
    text.append(usage.cost_text(), style="bold" if usage.priced else "yellow")
    failed = f" ({usage.tool_errors} failed)" if usage.tool_errors else ""
    text.append(f" · tool calls {usage.tool_calls}{failed}")
    if usage.retries:
        text.append(f" · retries {usage.retries}", style="yellow")
    text.append("\ntokens ", style="dim")
    text.append(" · ".join(f"{label} {format_tokens(getattr(usage.spend, name))}" for name, label in TOKEN_BUCKETS))
    return text


@dataclass
class UsageIndex:
    """The usage after every agent event of a log, so that the usage at any position is one lookup."""

    _positions: list[int] = field(default_factory=list)  # 1-based positions of the agent's events
    _totals: list[AgentUsage] = field(default_factory=list)  # the usage just after each of them
    _count: int = 0  # events indexed so far

    def extend(self, events: list[Event]) -> None:
        """Index events that follow the ones indexed so far."""
        total = self._totals[-1] if self._totals else AgentUsage()
        for position, event in enumerate(events, start=self._count + 1):
            if isinstance(event, AGENT_EVENTS):
                total = total.add(event)
                self._positions.append(position)
                self._totals.append(total)
        self._count += len(events)

    def at(self, position: int) -> AgentUsage:
        """The usage of the first `position` events."""
        index = bisect.bisect_right(self._positions, position)
        return self._totals[index - 1] if index else AgentUsage()

    @property
    def any(self) -> bool:
        """The log has events of an agent (model calls, retries, tool calls or results)."""
        return bool(self._positions)


# ---- tool arguments -------------------------------------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size(text: str) -> str:
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return f"<{lines} line{'s' if lines != 1 else ''}, {len(text):,} chars>"


def compact_value(value: object) -> str:
    """One argument as the transcript shows it: a short string quoted, a long or multi-line one by its
    size ("<120 lines, 4,321 chars>"), anything else as compact JSON cut to LONG_STRING characters."""
    if isinstance(value, str):
        if "\n" in value or len(value) > LONG_STRING:
            if "\n" not in value.rstrip("\n"):  # one long line (a command): its start
                return json.dumps(_cut(value.rstrip("\n"), LONG_STRING), ensure_ascii=False)
            return _size(value)
        return json.dumps(value, ensure_ascii=False)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return _cut(text, LONG_STRING)


def _shortened(value: object) -> bool:
    """The compact form leaves part of the value out."""
    if isinstance(value, str):
        return "\n" in value or len(value) > LONG_STRING
    return compact_value(value).endswith("…")


def compact_arguments(name: str, arguments: dict[str, object]) -> str:
    """`write_file(path="solution.py", content=<120 lines, 4,321 chars>)`: the call in one short line."""
    inner = ", ".join(f"{key}={compact_value(value)}" for key, value in arguments.items())
    return _cut(f"{name}({inner})", LINE_LIMIT)


def full_arguments(arguments: dict[str, object]) -> list[str]:
    """Every argument in full, one block each ("path: solution.py", "content:" and its lines)."""
    lines: list[str] = []
    for key, value in arguments.items():
        if isinstance(value, str) and "\n" in value:
            lines.append(f"{key}: {_size(value)}")
            lines += [f"  {line}" for line in value.rstrip("\n").split("\n")]
        elif isinstance(value, str):
            lines.append(f"{key}: {value}")
        else:
            try:
                dumped = json.dumps(value, ensure_ascii=False, indent=2)
            except (TypeError, ValueError):
                dumped = repr(value)
            first, *rest = dumped.split("\n")
            lines.append(f"{key}: {first}")
            lines += [f"  {line}" for line in rest]
    return lines


# ---- the transcript ---------------------------------------------------------------------------------------


@dataclass
class Entry:
    """One item of the transcript: the event's position in the log (1-based), its lines as shown
    collapsed, and its full lines (None when collapsed already shows everything)."""

    position: int
    kind: str  # model_call, model_retry, tool_call, tool_result, or "session" (revisions, evaluations, ...)
    short: list[Text]
    full: list[Text] | None = None

    @property
    def expandable(self) -> bool:
        return self.full is not None


def _lines(text: str) -> list[str]:
    return text.rstrip().lstrip("\n").split("\n") if text.strip() else []


def _block(lines: list[str], indent: str, style: str, limit: int | None) -> tuple[list[Text], bool]:
    """`lines` indented: collapsed (`limit` set) the first `limit` lines that are not blank, each cut to
    LINE_LIMIT, then "… N more lines"; in full (`limit` None) every line, whole. Also whether anything
    was left out."""
    if limit is None:
        return [Text(indent + line, style=style) for line in lines], False
    kept = [n for n, line in enumerate(lines) if line.strip()][:limit]
    out = [Text(indent + _cut(lines[n], LINE_LIMIT), style=style) for n in kept]
    more = len(lines) - (kept[-1] + 1 if kept else 0)
    cut = len(kept) < len(lines) or any(len(lines[n]) > LINE_LIMIT for n in kept)
    if more:
        out.append(Text(f"{indent}… {more} more line{'s' if more != 1 else ''} (enter expands)", style="dim italic"))
    return out, cut


def _turn_usage(event: ModelCall) -> str:
    usage = event.usage
    parts = [f"in {format_tokens(usage.uncached_input)}"]
    if usage.cache_read:
        parts.append(f"cache read {format_tokens(usage.cache_read)}")
    if usage.cache_write:
        parts.append(f"cache write {format_tokens(usage.cache_write)}")
    parts.append(f"out {format_tokens(usage.output)}")
    if usage.reasoning:
        parts.append(f"reasoning {format_tokens(usage.reasoning)}")
    parts.append(format_usd(event.cost_usd) if event.cost_usd is not None else "unpriced")
    return " · ".join(parts)


@dataclass
class TranscriptBuilder:
    """Turns events into transcript entries, remembering each tool call's name for its result."""

    _tools: dict[str, str] = field(default_factory=dict)  # call_id -> tool name

    def entry(self, event: Event, position: int) -> Entry | None:
        """The entry of one event, or None for events the transcript leaves out (driver output, the
        start of an evaluation)."""
        if isinstance(event, ModelCall):
            head = Text(f"turn {event.turn}", style="bold magenta")
            took = f"{event.latency_s:.1f} s" + (f" · {event.stop_reason}" if event.stop_reason else "")
            head.append(f" · {event.model} · {took}", style="magenta")
            tokens = Text("  " + _turn_usage(event), style="dim")
            lines = _lines(event.text)
            short, cut = _block(lines, "  ", "", SHORT_LINES)
            full = [head, tokens, *_block(lines, "  ", "", None)[0]] if cut else None
            if not lines:
                short = [Text("  (no text)", style="dim")]
            return Entry(position, "model_call", [head, tokens, *short], full)
        if isinstance(event, ModelRetry):
            status = f" (HTTP {event.status})" if event.status is not None else ""
            line = f"  ↻ turn {event.turn}: retry {event.attempt} after {event.wait_s:.1f} s{status}: {one_line(event.message)}"
            return Entry(position, "model_retry", [Text(_cut(line, LINE_LIMIT), style="yellow")])
        if isinstance(event, ToolCall):
            self._tools[event.call_id] = event.name
            line = compact_arguments(event.name, event.arguments)
            head = Text("  → " + line, style="blue")
            whole = not any(_shortened(value) for value in event.arguments.values()) and not line.endswith("…")
            full = None if whole else [head, *(Text("      " + text) for text in full_arguments(event.arguments))]
            return Entry(position, "tool_call", [head], full)
        if isinstance(event, ToolResult):
            name = self._tools.get(event.call_id, "tool")
            mark, word, style = ("✓", "ok", "green") if event.ok else ("✗", "error", "red")
            lines = _lines(event.content)
            first = lines[0] if lines else ""

            def result_head(limit: int | None) -> Text:
                line = Text(f"    {mark} {name} {word}", style=style)
                if lines:
                    line.append(": " + (_cut(first, limit) if limit else first))
                return line

            rest, cut = _block(lines[1:], "      ", "dim", SHORT_LINES - 1)
            full = [result_head(None), *_block(lines[1:], "      ", "dim", None)[0]] if cut or len(first) > LINE_LIMIT else None
            return Entry(position, "tool_result", [result_head(LINE_LIMIT), *rest], full)
        if isinstance(event, DriverOutput | EvalStarted):
            return None
        if isinstance(event, Revision):  # without its sha: what the agent's turn made
            files = ", ".join(event.files[:4]) + (f" (+{len(event.files) - 4})" if len(event.files) > 4 else "")
            said = f": {one_line(event.message, LONG_STRING)}" if event.message else ""
            return Entry(position, "session", [Text(f"· rev {event.rev} by {event.author} ({files}){said}", style="bold")])
        if isinstance(event, EvalFinished):
            style = status_style(event.report.status)
        elif isinstance(event, Error):
            style = "bold red"
        elif isinstance(event, Submission):
            style = "bold green"
        else:  # a revision, a skipped evaluation, the session's or the driver's start and end, ...
            style = "dim"
        return Entry(position, "session", [Text("· " + _cut(event_summary(event), LINE_LIMIT), style=style)])

    def entries(self, events: list[Event], first_position: int = 1) -> list[Entry]:
        """The entries of consecutive events, the first of them at `first_position` of the log."""
        found = (self.entry(event, position) for position, event in enumerate(events, start=first_position))
        return [entry for entry in found if entry is not None]
