"""The static policy's allow-list: current with the installed torch and Triton, and closed.

Closed means: from every object the allow-list lets a solution name (and from the library values a
solution holds: a tensor, a kernel, its autotuner, a config, a descriptor), following every attribute
name the checker would let through on that object (to depth 5), no path reaches a refused object
(ctypes, builtins, sys, os, io, importlib, inspect, gc, operator's getters, codecs, logging, threading,
subprocess, Triton's cache and compiler, any module not itself on the list).
"""

from __future__ import annotations

import subprocess
import sys
import time
import types
from collections import deque
from pathlib import Path

import pytest

from workbench.harness.policy import generate
from workbench.harness.policy.allowlist import RESOLVED_JSON, load
from workbench.harness.policy.rules import METACLASS_ATTRIBUTES, SAFE_LIBRARY_BASES, attribute_rule

REPO = Path(__file__).resolve().parent.parent
DEPTH = 5


def test_resolved_json_is_current() -> None:
    import json

    import torch
    import triton

    made_for = json.loads(RESOLVED_JSON.read_text())
    if (made_for["torch"], made_for["triton"]) != (torch.__version__, triton.__version__):
        pytest.skip(f"resolved.json was made with torch {made_for['torch']} and triton {made_for['triton']}")
    assert RESOLVED_JSON.read_text() == generate.render(generate.build()), (
        "resolved.json is stale: run python -m workbench.harness.policy.generate"
    )


def _names_through(obj: object, allowed: frozenset[str], library: frozenset[str]) -> list[str]:
    """The attribute names the checker lets a solution use on ``obj`` (a value that may be a library
    object): not refused by name, and allowed on library values, or unknown to every library type (a
    solution whose own classes define such a name may use it on anything)."""
    try:
        names = dir(obj)
    except Exception:
        return []
    return [n for n in names if attribute_rule(n) is None and not n.startswith("__") and (n in allowed or n not in library)]


def _walk() -> tuple[dict[str, str], int]:
    allow = load()
    modules = {p for p, kind in allow.paths.items() if kind == "module"}
    terminal = {"os.environ", "os.getenv"}  # os objects on purpose: the checker allows only readers after them
    queue: deque[tuple[object, str, int]] = deque()
    for path in allow.paths:
        if path not in terminal and "." in path and path.rsplit(".", 1)[0] in modules:
            try:
                queue.append((generate.resolve(path), path, 1))
            except (AttributeError, generate.GenerationError):
                continue  # not in the installed torch or triton (the list was made with another version)
    for sample in generate._samples():
        queue.append((sample, f"<{type(sample).__name__} value>", 1))
    refused: dict[str, str] = {}
    seen_ids: set[int] = set()
    seen_types: set[type] = set()
    keep: list[object] = []  # keeps walked objects alive, so that ids stay unique
    visited = 0
    while queue:
        obj, path, depth = queue.popleft()
        reason = generate.is_refused(obj, modules)
        if reason is not None:
            refused.setdefault(path, reason)
            continue
        if isinstance(obj, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)) or callable(obj):
            if id(obj) in seen_ids:
                continue
            seen_ids.add(id(obj))
        else:
            if type(obj) in seen_types and not isinstance(obj, (tuple, list, dict)):
                continue
            seen_types.add(type(obj))
        keep.append(obj)
        visited += 1
        if depth >= DEPTH:
            continue
        if isinstance(obj, types.ModuleType):
            children = [p.rsplit(".", 1)[1] for p in allow.paths if p.rsplit(".", 1)[0] == obj.__name__]
        else:
            children = _names_through(obj, allow.attributes, allow.library)
        for name in children:
            try:
                child = getattr(obj, name)
            except Exception:
                continue
            queue.append((child, f"{path}.{name}", depth + 1))
    return refused, visited


def test_no_allowed_path_reaches_a_refused_object() -> None:
    start = time.monotonic()
    refused, visited = _walk()
    assert visited > 500, visited
    assert refused == {}, "\n".join(f"{path}: {why}" for path, why in sorted(refused.items()))
    assert time.monotonic() - start < 30


@pytest.mark.parametrize(
    "obj",
    ["operator.attrgetter", "builtins.getattr", "ctypes", "sys", "triton.runtime.cache.get_cache_manager", "codecs.open"],
)
def test_the_walk_knows_refused_objects(obj: str) -> None:
    assert generate.is_refused(generate.resolve(obj), {"torch"}) is not None


def test_libdevice_is_allowed() -> None:
    allow = load()
    assert allow.kind("triton.language.extra.libdevice") == "module"
    assert allow.kind("triton.language.extra.libdevice.fma") == "function"
    assert allow.kind("triton.language.sum") is not None


def test_inline_asm_is_not_allowed() -> None:
    """PTX in a kernel: no rule reads inside it (a spin on %globaltimer pads timings)."""
    allow = load()
    assert allow.kind("triton.language.inline_asm_elementwise") is None
    assert not any("inline_asm" in path for path in allow.paths)


@pytest.mark.parametrize("base", sorted(SAFE_LIBRARY_BASES))
def test_library_bases_bring_no_metaclass(base: str) -> None:
    """A class of the file derived from an allowed library base gets ``type`` or ``EnumType`` as its
    metaclass (no ABCMeta.register, no __instancecheck__) and is never a subclass of ``type``."""
    import enum
    import typing

    kind = generate.resolve(base)
    if base == "typing.Generic":
        kind = typing.Generic[typing.TypeVar("T")]  # type: ignore[index]
    namespace: dict[str, object] = {"__module__": __name__}
    if base == "typing.NamedTuple":
        namespace["__annotations__"] = {"x": int}
    made = types.new_class("Made", (kind,), exec_body=lambda ns: ns.update(namespace))
    assert type(made) in (type, enum.EnumType), type(made)
    assert not issubclass(made, type)
    assert {n for n in dir(type(made)) if not n.startswith("__")} <= METACLASS_ATTRIBUTES  # judged as library names


def test_checking_imports_neither_torch_nor_triton() -> None:
    """The parent process checks a refused source before starting anything: it must not pay for torch's import
    (the time is measured in docs/performance.md, not asserted here)."""
    code = (
        "import sys\n"
        "from workbench.harness.policy import checker as policy_checker\n"
        "policy_checker.check_source(open(sys.argv[1]).read())\n"
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'imported torch or triton'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "tasks" / "muon_orthogonalize" / "expert.py")],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
