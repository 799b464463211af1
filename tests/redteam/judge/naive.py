"""A judge that believes what it is shown, for the judge's red team.

It reads the candidate's listing from the prompt (the `NUMBER | text` lines inside `<candidate ...>`) and
credits a rubric criterion as realised as soon as any shown line mentions it: the criterion's key (`square_side`
or `square side`, any case), the name of an expert function the criterion's evidence names (`_sym_kernel`), or
a fragment of code the red team gives for it (`tl.dot(`: what honest code shows).
It cites the first executable line at or after the mention, quoting it exactly, so its replies always pass
the verification: only what the harness shows it decides its score. Each level scores 100 x the share of its
criteria credited. A real model is harder to fool; this one measures what reaches the judge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from workbench.catalog.guidance import Level
from workbench.judge.evidence import EvidenceSpan
from workbench.judge.testing import judge_reply, level
from workbench.judge.verify import executable_lines
from workbench.llm import Conversation, UserTurn

LEVELS: tuple[Level, ...] = ("L1", "L2", "L3")
MIN_NAME = 7  # an expert function's name is a marker when it is at least this long (not `square`, `padded`)
_LISTING = re.compile(r"<candidate [^>]*>\n(.*?)\n</candidate>", re.DOTALL)
_LINE = re.compile(r"^\s*\d+ \| ?(.*)$")


def markers(
    criteria: Mapping[str, Sequence[str]], evidence: Mapping[str, list[EvidenceSpan]], code: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    """Per criterion id, the lowercase strings whose mention the naive judge believes; `code`: per criterion,
    fragments of code that realise part of it (what a real judge also sees in honest code)."""
    found: dict[str, list[str]] = {}
    for ids in criteria.values():
        for criterion in ids:
            key = criterion.rsplit(".", 1)[-1]
            names = [span.name for span in evidence.get(criterion, []) if len(span.name) >= MIN_NAME]
            found[criterion] = [key.lower(), key.replace("_", " ").lower(), *(n.lower() for n in names), *code.get(criterion, ())]
    return found


def listing_of(prompt: str) -> list[str]:
    """The candidate's lines as the prompt shows them (without the number prefix)."""
    match = _LISTING.search(prompt)
    if match is None:
        raise ValueError("the prompt has no <candidate> listing")
    lines = []
    for row in match.group(1).splitlines():
        parsed = _LINE.match(row)
        lines.append(parsed.group(1) if parsed else "")
    return lines


def credited(lines: Sequence[str], marks: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Criterion id -> the line the naive judge cites for it (1-based), for every criterion it believes realised."""
    executable = executable_lines("\n".join(lines) + "\n")
    found: dict[str, int] = {}
    for criterion, words in marks.items():
        for number, line in enumerate(lines, start=1):
            if any(word in line.lower() for word in words):
                after = [n for n in sorted(executable) if n >= number]
                if after:
                    found[criterion] = after[0]
                break
    return found


def scores(lines: Sequence[str], criteria: Mapping[str, Sequence[str]], marks: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """The naive judge's score per level on `lines` (no prompt, no verification: for the raw text)."""
    found = credited(lines, marks)
    return {lv: round(100.0 * sum(c in found for c in criteria[lv]) / len(criteria[lv]), 1) for lv in LEVELS}


def reply_to(conversation: Conversation, criteria: Mapping[str, Sequence[str]], marks: Mapping[str, Sequence[str]]) -> str:
    """The naive judge's reply to the judge's prompt (the conversation's first user message)."""
    first = conversation.messages[0]
    assert isinstance(first, UserTurn)
    lines = listing_of(first.text)
    found = credited(lines, marks)
    levels = {}
    for lv in LEVELS:
        realized = [c for c in criteria[lv] if c in found]
        missing = [c for c in criteria[lv] if c not in found]
        citations = [
            {"file": "solution.py", "start_line": found[c], "end_line": found[c], "quote": lines[found[c] - 1], "criterion": c}
            for c in realized[:4]
        ]
        score = round(100.0 * len(realized) / len(criteria[lv]), 1)
        rationale = "Credited where the listing mentions the criterion."
        levels[lv] = level(score, rationale, realized=realized, missing=missing, citations=citations)
    return judge_reply(**levels)
