"""A reader for the part of YAML that GPU MODE's task.yml files use (no YAML library is a dependency here).

Understood: `key: value` at any indentation, scalars (integers, floats, booleans, null, quoted and bare
strings), block scalars (`key: |` and `key: >`), lists of scalars, of flow mappings (`- {"size": 127, seed: 1}`)
and of block mappings (`- size: 127` with the other keys indented below), and comments. Anything else is a
ValueError naming the line, which the importer reports as that problem's file not being read.
"""

from __future__ import annotations

import json
import re
from typing import Any

_KEY = re.compile(r"^(?P<key>[A-Za-z0-9_.\-\"']+)\s*:(?:\s+(?P<value>.*))?$")
_NUMBER = re.compile(r"^[-+]?(\d[\d_]*)$")
_FLOAT = re.compile(r"^[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$")


def _strip_comment(line: str) -> str:
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index].rstrip()
    return line.rstrip()


def scalar(text: str) -> Any:
    """A YAML scalar: a number, a boolean, null, or a (quoted or bare) string."""
    text = text.strip()
    if not text or text in ("~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text[0] == '"':
        return json.loads(text)
    if text[0] == "'" and text.endswith("'") and len(text) >= 2:
        return text[1:-1].replace("''", "'")
    if _NUMBER.match(text):
        return int(text.replace("_", ""))
    if _FLOAT.match(text):
        return float(text)
    return text


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, quote, current = [], 0, "", ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == sep and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += char
    if current.strip():
        parts.append(current)
    return parts


def flow(text: str) -> Any:
    """A flow mapping `{k: v, ...}`, a flow list `[a, b]`, or a scalar."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        found: dict[str, Any] = {}
        for part in _split_top(text[1:-1], ","):
            key, colon, value = part.partition(":")
            if not colon:
                raise ValueError(f"expected key: value in {text!r}")
            found[str(scalar(key))] = flow(value)
        return found
    if text.startswith("[") and text.endswith("]"):
        return [flow(part) for part in _split_top(text[1:-1], ",")]
    return scalar(text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def loads(text: str) -> dict[str, Any]:
    """The document's top-level mapping."""
    lines = [(number, _strip_comment(raw)) for number, raw in enumerate(text.splitlines(), 1)]
    raw_lines = text.splitlines()
    items = [(n, line) for n, line in lines if line.strip()]
    value, index = _mapping(items, 0, 0, raw_lines)
    if index != len(items):
        number, line = items[index]
        raise ValueError(f"line {number}: unexpected indentation: {line.strip()!r}")
    return value


def _mapping(items: list[tuple[int, str]], index: int, indent: int, raw: list[str]) -> tuple[dict[str, Any], int]:
    found: dict[str, Any] = {}
    while index < len(items):
        number, line = items[index]
        if _indent(line) < indent:
            break
        if _indent(line) > indent:
            raise ValueError(f"line {number}: unexpected indentation: {line.strip()!r}")
        match = _KEY.match(line.strip())
        if match is None:
            raise ValueError(f"line {number}: expected `key: value`, got {line.strip()!r}")
        key = str(scalar(match["key"]))
        rest = (match["value"] or "").strip()
        index += 1
        if rest in ("|", ">", "|-", ">-", "|+", ">+"):
            found[key], index = _block_scalar(items, index, indent, raw, folded=rest.startswith(">"))
        elif rest:
            found[key] = flow(rest)
        elif index < len(items) and _indent(items[index][1]) >= indent and items[index][1].strip().startswith("- "):
            found[key], index = _list(items, index, _indent(items[index][1]), raw)
        elif index < len(items) and _indent(items[index][1]) > indent:
            found[key], index = _mapping(items, index, _indent(items[index][1]), raw)
        else:
            found[key] = None
    return found, index


def _list(items: list[tuple[int, str]], index: int, indent: int, raw: list[str]) -> tuple[list[Any], int]:
    found: list[Any] = []
    while index < len(items):
        number, line = items[index]
        if _indent(line) != indent or not line.strip().startswith("- "):
            break
        body = line.strip()[2:].strip()
        if body.startswith(("{", "[")) or _KEY.match(body) is None:
            found.append(flow(body))
            index += 1
            continue
        # a block mapping: its first key on the dash's line, the others indented below it
        inner = indent + 2
        items = [*items[:index], (number, " " * inner + body), *items[index + 1 :]]
        value, index = _mapping(items, index, inner, raw)
        found.append(value)
    return found, index


def _block_scalar(items: list[tuple[int, str]], index: int, indent: int, raw: list[str], folded: bool) -> tuple[str, int]:
    if index >= len(items) or _indent(items[index][1]) <= indent:
        return "", index
    first_number = items[index][0]
    inner = _indent(raw[first_number - 1])
    lines: list[str] = []
    number = first_number
    while number <= len(raw):
        text = raw[number - 1]
        if text.strip() and _indent(text) < inner:
            break
        lines.append(text[inner:] if text.strip() else "")
        number += 1
    while index < len(items) and items[index][0] < number:
        index += 1
    while lines and not lines[-1]:
        lines.pop()
    joined = " ".join(lines) if folded else "\n".join(lines)
    return joined + "\n", index
