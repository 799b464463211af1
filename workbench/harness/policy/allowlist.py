"""The resolved allow-list (resolved.json, generated from allow.toml by ``generate``), read without
importing torch or Triton: the checker runs before any process starts and must stay cheap."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

RESOLVED_JSON = Path(__file__).resolve().parent / "resolved.json"


@dataclass(frozen=True)
class AllowList:
    paths: dict[str, str]  # allowed qualified path -> "module", "class", "function" or "value"
    attributes: frozenset[str]  # attribute names allowed on a value that can be a library object
    library: frozenset[str]  # every attribute name of the library types a solution can hold
    torch_functions: frozenset[str]  # torch's public callables (to name the rule of a refused one)
    roots: frozenset[str]  # modules a solution may import from

    def kind(self, path: str) -> str | None:
        return self.paths.get(path)


@functools.cache
def load() -> AllowList:
    data = json.loads(RESOLVED_JSON.read_text())
    paths: dict[str, str] = data["paths"]
    return AllowList(
        paths=paths,
        attributes=frozenset(data["attributes"]),
        library=frozenset(data["library_attributes"]),
        torch_functions=frozenset(data["torch_functions"]),
        roots=frozenset(p for p, kind in paths.items() if kind == "module" and "." not in p),
    )
