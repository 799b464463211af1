"""The candidate as the judge sees it: its code, without what its author says about it.

An agent rewarded by the judge's score can write to the judge: comments and docstrings claiming each design
property, strings addressed to the evaluator. None of it is evidence, so the judge never reads it:

- comments are removed;
- docstrings, and every other statement that is only a string, are emptied (`""`);
- every other string literal keeps its quotes and prefix but its text becomes `…`, unless it is short and
  reads as a name (`"BLOCK_M"`, `"float16"`: autotuning keys and dtypes say what the code does);

and every line keeps its number (a multi-line string keeps its lines, blank), so the judge's citations by line
number point at the same code in the stored file. Source that does not tokenize (it could not run either)
loses what follows a `#` outside quotes on each line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from workbench.judge.verify import statement_strings

NAME_LIKE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]{0,39}")  # a short string that reads as a name is kept
PLACEHOLDER = "…"
_STRING_PREFIX = re.compile(r"^[A-Za-z]*")


def _neutral(literal: str) -> str:
    """A string literal with its text replaced by the placeholder (prefix and quotes kept), unless it reads as
    a short name."""
    prefix = _STRING_PREFIX.match(literal)
    head = prefix.group(0) if prefix else ""
    body = literal[len(head) :]
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    inner = body[len(quote) : len(body) - len(quote)]
    if "f" not in head.lower() and NAME_LIKE.fullmatch(inner):
        return literal
    return f"{head}{quote}{PLACEHOLDER}{quote}"


def _fallback(source: str) -> str:
    out = []
    for line in source.splitlines(keepends=True):
        code, quote = [], ""
        for ch in line:
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                break
            code.append(ch)
        text = "".join(code).rstrip()
        out.append(text + ("\n" if line.endswith("\n") else ""))
    return "".join(out)


def without_claims(source: str) -> str:
    """`source` with its comments removed, its bare strings emptied and its other strings neutral (see the
    module's docstring); the same number of lines, each line of code where it was."""
    try:
        spans = statement_strings(ast.parse(source))
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return _fallback(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []
    for token in tokens:
        if token.type == tokenize.COMMENT:
            edits.append((token.start, token.end, ""))
        elif token.type == tokenize.STRING:
            bare = any(start <= token.start and token.end <= end for start, end in spans)
            replacement = '""' if bare else _neutral(token.string)
            edits.append((token.start, token.end, replacement + "\n" * (token.end[0] - token.start[0])))
        elif tokenize.tok_name.get(token.type) == "FSTRING_MIDDLE" and token.string:  # Python 3.12: an f-string's text
            edits.append((token.start, token.end, PLACEHOLDER + "\n" * (token.end[0] - token.start[0])))
    for (start_row, start_col), (end_row, end_col), text in sorted(edits, reverse=True):
        first, last = lines[start_row - 1], lines[end_row - 1]
        merged = first[:start_col] + text + last[end_col:]
        lines[start_row - 1 : end_row] = merged.splitlines(keepends=True) or [""]
    return "".join(line.rstrip() + ("\n" if line.endswith("\n") else "") for line in lines)
