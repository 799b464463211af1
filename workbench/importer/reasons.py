"""Why a problem was skipped, in words that name the real cause: the probe's reason refined where its error
says more (a module that is not installed, memory the CPU could not give), and the peer's source line quoted.

The probe names the file and line an error came from (`(problem.py, line 15: )`) but cannot quote it: the
peer's files run from strings, which the traceback module cannot read back. The importer has their text, so it
fills the line in here.
"""

from __future__ import annotations

import re

from workbench.harness.protocol.probe import SKIP_TEXT

# Reasons the importer finds itself, beside the probe's (protocol.probe.SkipReason)
IMPORTER_TEXT: dict[str, str] = {
    "multi_rank": "a multi-rank problem (several GPUs at once)",
    "missing_module": "needs a module that is not installed",
    "reduced_sizes": "fails at reduced sizes, too large at its own",
}
REASON_TEXT: dict[str, str] = {**SKIP_TEXT, **IMPORTER_TEXT}

_WHERE = re.compile(r"\((?P<file>[A-Za-z0-9_]+)\.py, line (?P<line>\d+): (?P<text>[^)]*)\)")
_MISSING = re.compile(r"ModuleNotFoundError: No module named '(?P<module>[^']+)'")
_ASKED = re.compile(r"tried to allocate (?P<bytes>\d+) bytes")
_MEMORY = ("can't allocate memory", "out of memory", "MemoryError", "Cannot allocate memory")
LINE_LIMIT = 160  # characters of a quoted source line


def text(reason: str | None) -> str:
    """The words for a reason code (the code itself where it has none)."""
    return REASON_TEXT.get(reason or "", reason or "")


def quote_lines(detail: str, sources: dict[str, str]) -> str:
    """`detail` with every empty `(file.py, line N: )` filled with that line of the peer's file, stripped."""

    def fill(match: re.Match[str]) -> str:
        if match["text"].strip():
            return match[0]
        lines = sources.get(match["file"], "").splitlines()
        number = int(match["line"])
        line = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        if len(line) > LINE_LIMIT:
            line = line[: LINE_LIMIT - 3] + "..."
        return f"({match['file']}.py, line {number}: {line})" if line else f"({match['file']}.py, line {number})"

    return _WHERE.sub(fill, detail)


def refine(reason: str, detail: str, sources: dict[str, str]) -> tuple[str, str]:
    """The probe's (reason, detail) with the cause its error names: a module that is not installed (and not one
    of the pack's own files) is `missing_module`, memory the CPU could not give is `too_large`; the source line
    quoted either way."""
    found = _WHERE.search(detail)  # before quoting: a quoted line may hold parentheses
    at = f" {quote_lines(found[0], sources)}" if found else ""
    detail = quote_lines(detail, sources)
    missing = _MISSING.search(detail)
    if missing and missing["module"].split(".")[0] not in sources:
        return "missing_module", f"needs the module {missing['module']!r}, which is not installed where the probe runs{at}"
    if reason in ("cpu_failure", "crashed") and any(marker in detail for marker in _MEMORY):
        asked = _ASKED.search(detail)
        size = f" ({int(asked['bytes']) / 2**30:.1f} GiB at once)" if asked else ""
        return "too_large", f"the CPU could not give the memory the problem asks for{size}{at}"
    return reason, detail
