"""Importing a task's Python files (reference.py, inputs.py) by path, each under a private name: used by the checker
and the solution process (standard library only: importing it loads neither the catalog nor pydantic)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_file(path: Path, module_name: str) -> ModuleType:
    """Import a Python file as a fresh module named module_name."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def module_from_source(source: str, module_name: str, filename: str) -> ModuleType:
    """Run a task file's source (sent over the channel: the sandbox hides the task's folder) as a fresh
    module named module_name. Only the harness calls it, with the text of a file of the task it evaluates."""
    module = ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)  # the task's own file, never the solution's
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module
