"""Verification of the judge's citations, by code and never by the model.

A citation `{file, start_line, end_line, quote, criterion}` of a level is valid when:

- `file` is the judged file (the workspace-relative path the prompt gave);
- `1 <= start_line <= end_line <= ` the number of lines of the file at the judged revision;
- the range holds source that does something: for Python, at least one line carries a token other than a
  comment, a blank line or a docstring (`tokenize` for the tokens, `ast` for the docstrings: any statement
  that is only a string literal); for a design's canonical JSON, at least one line holds a key or a value,
  not only brackets and commas;
- `quote` is exactly the text of those lines: both are split into lines (any line ending), trailing
  whitespace is removed from each line and one final newline of the quote is ignored; nothing else is
  normalised (not indentation, not inner spaces, not quotes);
- `criterion` is the id of a rubric criterion of the cited level;
- no cited line lies in code that never ran (not shown to the judge: `shown.py`).

A level is valid when its citations all are, it cites 1 to 4 passages (none is allowed only with a score of 0),
and its `realized`, `partial` and `missing` lists name each of the level's criteria exactly once.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from workbench.judge.verdict import MAX_CITATIONS, Citation, CitationCheck, Level, LevelReply

_SKIPPED_TOKENS = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
    tokenize.ENCODING,
}
_STRUCTURE = frozenset("{}[],")
_SHOWN = 120  # characters of a line quoted in an error


def statement_strings(tree: ast.AST) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions of every statement that is only a string literal (docstrings and bare strings)."""
    spans = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node.end_lineno is not None
            and node.end_col_offset is not None
        ):
            spans.append(((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)))
    return spans


def executable_lines(source: str) -> set[int]:
    """1-based numbers of the lines of Python `source` that carry executable source: a token that is not a
    comment, a line break, indentation or part of a docstring. Source that does not tokenize falls back to
    lines that are neither blank nor comments."""
    try:
        spans = statement_strings(ast.parse(source))
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return {n for n, line in enumerate(source.splitlines(), start=1) if line.strip() and not line.strip().startswith("#")}
    lines: set[int] = set()
    for token in tokens:
        if token.type in _SKIPPED_TOKENS:
            continue
        if any(start <= token.start and token.end <= end for start, end in spans):
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return lines


def content_lines(text: str) -> set[int]:
    """1-based numbers of the lines of a design's canonical JSON that hold a key or a value (not only brackets)."""
    return {n for n, line in enumerate(text.splitlines(), start=1) if set(line.strip()) - _STRUCTURE - {" "}}


def normalised_lines(text: str) -> list[str]:
    """`text` split into lines (any line ending), each without trailing whitespace; one final newline ignored."""
    return [line.rstrip() for line in text.splitlines()]


def _shown(line: str) -> str:
    return repr(line if len(line) <= _SHOWN else line[: _SHOWN - 3] + "...")


@dataclass(frozen=True)
class CitedText:
    """The judged file at the judged revision, as citations are checked against it."""

    file: str
    text: str
    python: bool = True  # Python source; False: a design's canonical JSON
    hidden: tuple[tuple[int, int, str], ...] = ()  # (first, last, what): spans the judge was not shown

    @cached_property
    def lines(self) -> list[str]:
        return normalised_lines(self.text)

    @cached_property
    def meaningful(self) -> set[int]:
        return executable_lines(self.text) if self.python else content_lines(self.text)

    def check(self, citation: Citation, criteria: Sequence[str], level: Level, number: int) -> CitationCheck:
        """The verification of one citation (see the module's docstring); errors name the level and citation."""
        where = f"{level} citation {number} ({citation.file} {citation.start_line}-{citation.end_line})"
        errors: list[str] = []
        if citation.criterion not in criteria:
            errors.append(
                f"{where}: criterion {citation.criterion!r} is not a {level} criterion of the rubric "
                f"(the {level} criteria are {', '.join(criteria)})"
            )
        if citation.file != self.file:
            errors.append(f"{where}: file {citation.file!r} is not the judged file; cite {self.file!r}")
            return CitationCheck(citation=number, ok=False, errors=errors)
        count = len(self.lines)
        if citation.start_line < 1 or citation.end_line < citation.start_line or citation.end_line > count:
            errors.append(
                f"{where}: lines {citation.start_line}-{citation.end_line} do not exist in {self.file} at this revision "
                f"(it has lines 1-{count}; start_line <= end_line)"
            )
            return CitationCheck(citation=number, ok=False, errors=errors)
        span = range(citation.start_line, citation.end_line + 1)
        for first, last, what in self.hidden:
            if first <= citation.end_line and citation.start_line <= last:
                errors.append(
                    f"{where}: lines {first}-{last} hold {what}, code that never ran: it was not shown and earns nothing"
                )
        if not any(n in self.meaningful for n in span):
            what = (
                "executable source (only comments, docstrings or blank lines)"
                if self.python
                else "design content (only brackets, commas or blank lines)"
            )
            errors.append(f"{where}: lines {citation.start_line}-{citation.end_line} hold no {what}")
        errors += self._quote_errors(citation, where)
        return CitationCheck(citation=number, ok=not errors, errors=errors)

    def _quote_errors(self, citation: Citation, where: str) -> list[str]:
        expected = self.lines[citation.start_line - 1 : citation.end_line]
        got = normalised_lines(citation.quote)
        if got == expected:
            return []
        hint = ""
        if got and any(line.lstrip()[:1].isdigit() and " | " in line for line in got):
            hint = " (quote the text without the listing's `NUMBER | ` prefix)"
        if len(got) != len(expected):
            return [
                f"{where}: the quote has {len(got)} line(s) but lines {citation.start_line}-{citation.end_line} are "
                f"{len(expected)}; the quote must be exactly the text of the cited lines{hint}"
            ]
        for offset, (want, have) in enumerate(zip(expected, got, strict=True)):
            if want != have:
                line = citation.start_line + offset
                return [
                    f"{where}: the quote is not the text of the cited lines: line {line} is {_shown(want)}, "
                    f"the quote has {_shown(have)}{hint}"
                ]
        return []  # pragma: no cover - unequal lists of equal length differ somewhere


def check_level(
    reply: LevelReply, cited: CitedText, criteria: Sequence[str], level: Level
) -> tuple[list[CitationCheck], list[str]]:
    """(the check of each citation, every error of the level: the citations' and the level's own)."""
    errors: list[str] = []
    count = len(reply.citations)
    if count > MAX_CITATIONS:
        errors.append(f"{level}: {count} citations; cite at most {MAX_CITATIONS}")
    if count == 0 and reply.score > 0:
        errors.append(f"{level}: a score above 0 needs 1 to {MAX_CITATIONS} citations; none was given")
    named: dict[str, list[str]] = {}
    for group in ("realized", "partial", "missing"):
        for criterion in getattr(reply, group):
            named.setdefault(criterion, []).append(group)
    unknown = [c for c in named if c not in criteria]
    if unknown:
        errors.append(f"{level}: {', '.join(map(repr, unknown))} not {level} criteria of the rubric ({', '.join(criteria)})")
    twice = [f"{c!r} ({' and '.join(groups)})" for c, groups in named.items() if len(groups) > 1]
    if twice:
        errors.append(f"{level}: criteria named more than once in realized/partial/missing: {', '.join(twice)}")
    unnamed = [c for c in criteria if c not in named]
    if unnamed:
        errors.append(
            f"{level}: name every {level} criterion once in realized, partial or missing; not named: {', '.join(unnamed)}"
        )
    checks = [cited.check(citation, criteria, level, n) for n, citation in enumerate(reply.citations, start=1)]
    for check in checks:
        errors += check.errors
    return checks, errors
