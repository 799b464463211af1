"""Resolve the allow-list (allow.toml) against the installed torch and Triton; write resolved.json.

Run ``python -m workbench.harness.policy.generate`` after changing allow.toml or upgrading torch or
Triton; tests/test_policy_allowlist.py fails while resolved.json is stale. Every allowed path is
imported and walked to the object it denotes, and the whole list is refused (GenerationError) if an
explicitly listed entry is a refused object (``is_refused``): a module that is not itself on the list,
an interpreter, file, process or FFI facility, a callable that takes attribute names, Triton's cache or
compiler. ``public = true`` expansions skip such objects and record them under ``skipped``.

This module imports torch and Triton; the checker never imports it (it reads resolved.json).
"""

from __future__ import annotations

import builtins
import enum
import functools
import importlib
import json
import operator
import sys
import tomllib
import types
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction
from triton.tools.tensor_descriptor import TensorDescriptor

HERE = Path(__file__).resolve().parent
ALLOW_TOML = HERE / "allow.toml"
RESOLVED_JSON = HERE / "resolved.json"

# Objects defined in (or being) these modules are refused wherever they are reached.
REFUSED_MODULES = (
    "builtins",
    "sys",
    "os",
    "posix",
    "io",
    "_io",
    "importlib",
    "inspect",
    "gc",
    "operator",
    "_operator",
    "codecs",
    "_codecs",
    "json",
    "pickle",
    "marshal",
    "ctypes",
    "_ctypes",
    "logging",
    "threading",
    "_thread",
    "subprocess",
    "multiprocessing",
    "socket",
    "shutil",
    "tempfile",
    "pathlib",
    "types",
    "weakref",
    "traceback",
    "signal",
    "mmap",
    "numpy",
    "triton.runtime.cache",
    "triton.runtime.driver",
    "triton.runtime.build",
    "triton.compiler",
    "triton.backends",
    "triton.knobs",
    "triton.testing",
    "torch._dynamo",
    "torch._inductor",
    "torch.fx",
    "torch.jit",
    "torch.serialization",
    "torch.hub",
    "torch.distributed",
    "torch.multiprocessing",
    "torch.library",
    "torch.utils",
    "torch.overrides",
    "torch.profiler",
    "torch.package",
)
# Builtins that are refused although Python's value types (int, str, len...) are not.
REFUSED_BUILTINS = (
    "getattr",
    "setattr",
    "delattr",
    "eval",
    "exec",
    "compile",
    "__import__",
    "open",
    "vars",
    "dir",
    "globals",
    "locals",
    "breakpoint",
    "input",
    "memoryview",
    "help",
)


class GenerationError(RuntimeError):
    pass


def _under(name: str, prefixes: tuple[str, ...] | list[str] | set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _refused_identities() -> dict[int, str]:
    found = {id(getattr(builtins, name)): f"builtins.{name}" for name in REFUSED_BUILTINS}
    for name in ("attrgetter", "itemgetter", "methodcaller"):
        found[id(getattr(operator, name))] = f"operator.{name}"
    found[id(importlib.import_module)] = "importlib.import_module"
    found[id(functools.update_wrapper)] = "functools.update_wrapper"
    found[id(functools.singledispatch)] = "functools.singledispatch"
    return found


def is_refused(obj: object, allowed_modules: set[str]) -> str | None:
    """Why ``obj`` must never be reachable from an allowed name (None when it may)."""
    if isinstance(obj, types.ModuleType):
        return None if obj.__name__ in allowed_modules else f"module {obj.__name__}"
    reason = _refused_identities().get(id(obj))
    if reason is not None:
        return reason
    if isinstance(obj, (types.FrameType, types.CodeType, types.TracebackType, types.GeneratorType)):
        return type(obj).__name__
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return None  # an exception class: something to catch, wherever it is defined
    kind = obj if isinstance(obj, type) else None
    module = getattr(obj, "__module__", None) if isinstance(obj, (type, types.FunctionType)) else None
    if kind is None and not isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        module = type(obj).__module__  # an instance: judged by its class
        if module == "builtins":
            return None
    if isinstance(obj, types.BuiltinFunctionType) and module is None:
        owner = getattr(obj, "__self__", None)
        if isinstance(owner, types.ModuleType):
            module = owner.__name__
    if isinstance(module, str) and module != "builtins" and _under(module, REFUSED_MODULES):
        return f"defined in {module}"
    return None


def resolve(path: str) -> object:
    """Import the longest module prefix of ``path`` and walk the rest with getattr."""
    parts = path.split(".")
    obj: object = None
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    if parts[0] == "builtins":
        return getattr(builtins, parts[1])
    raise GenerationError(f"{path} does not resolve")


def _kind(obj: object) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if isinstance(obj, type):
        return "class"
    if callable(obj):
        return "function"
    return "value"


def _public_members(module: types.ModuleType, defined_under: str) -> list[str]:
    names = []
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name, None)
        if isinstance(obj, types.ModuleType):
            continue
        if isinstance(obj, (int, float, str, bool)) and not isinstance(obj, enumlike()):
            names.append(name)
            continue
        home = getattr(obj, "__module__", None)
        wrapped = getattr(obj, "fn", None)  # a Triton @jit function (compiled or interpreted): its source's module
        if isinstance(wrapped, types.FunctionType):
            home = wrapped.__module__
        if not isinstance(home, str) and isinstance(obj, types.BuiltinFunctionType):
            owner = getattr(obj, "__self__", None)
            home = owner.__name__ if isinstance(owner, types.ModuleType) else None
        if not isinstance(home, str):
            home = type(obj).__module__
        if isinstance(home, str) and _under(home, [defined_under]):
            names.append(name)
    return names


def enumlike() -> tuple[type, ...]:
    return (enum.Enum,)


def _samples() -> list[object]:
    """Instances whose attributes count as library attributes: a kernel, its wrappers, a config."""

    def sample(x_ptr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], dtype=tl.float32))

    found: list[object] = [triton.Config({"BLOCK": 16}), torch.empty(2, 2)]
    for kernel in (JITFunction(sample), InterpretedFunction(sample)):  # whatever TRITON_INTERPRET says
        found.append(kernel)
        found.append(triton.autotune(configs=[triton.Config({"BLOCK": 16})], key=[])(kernel))
        found.append(triton.heuristics({"BLOCK": lambda args: 16})(kernel))
    found.append(TensorDescriptor.from_tensor(torch.empty(16, 16), [16, 16]))
    return found


def build() -> dict[str, Any]:
    config = tomllib.loads(ALLOW_TOML.read_text())
    modules: dict[str, dict[str, Any]] = config["modules"]
    allowed_modules = set(modules)
    paths: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for module_name, spec in modules.items():
        module = resolve(module_name)
        if not isinstance(module, types.ModuleType):
            raise GenerationError(f"{module_name} is not a module")
        paths[module_name] = "module"
        names = list(spec.get("members", []))
        if spec.get("public"):
            under = "triton.language" if _under(module_name, ["triton.language"]) else module_name
            names += _public_members(module, under)
        if spec.get("dtypes"):
            names += [n for n in dir(module) if not n.startswith("_") and isinstance(getattr(module, n), torch.dtype)]
        refuse = set(spec.get("refuse", []))
        for name in sorted(set(names) - refuse):
            path = f"{module_name}.{name}"
            obj = resolve(path)
            reason = None if spec.get("terminal") else is_refused(obj, allowed_modules)
            if reason is not None:
                if name in spec.get("members", []):
                    raise GenerationError(f"{path} is a refused object ({reason})")
                skipped[path] = reason
                continue
            paths[path] = _kind(obj)
    attributes: set[str] = set()
    for group in config["attributes"].values():
        group_names: set[str] = set(group.get("names", []))
        for type_path in group.get("public_of", []):
            group_names.update(n for n in dir(resolve(type_path)) if not n.startswith("_"))
        attributes.update(group_names - set(group.get("refuse", [])))
    library: set[str] = set()
    for type_path in config["library_types"]["types"]:
        kind = resolve(type_path)
        library.update(n for n in dir(kind) if not (n.startswith("__") and n.endswith("__")))
    library.update(config["library_types"].get("names", []))
    if config["library_types"].get("instances"):
        for sample in _samples():
            library.update(n for n in dir(sample) if not (n.startswith("__") and n.endswith("__")))
    torch_functions = sorted(n for n in dir(torch) if not n.startswith("_") and callable(getattr(torch, n, None)))
    return {
        "generated_by": "python -m workbench.harness.policy.generate",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "paths": dict(sorted(paths.items())),
        "attributes": sorted(attributes),
        "library_attributes": sorted(library),
        "torch_functions": torch_functions,
        "skipped": dict(sorted(skipped.items())),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=0, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render(build())
    if "--check" in args:
        current = RESOLVED_JSON.read_text() if RESOLVED_JSON.exists() else ""
        if current != text:
            print(f"{RESOLVED_JSON} is stale: run python -m workbench.harness.policy.generate", file=sys.stderr)
            return 1
        return 0
    RESOLVED_JSON.write_text(text)
    print(f"wrote {RESOLVED_JSON}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
