"""What leaves the guarded window of a call: the result of `run` or what it raised, as harness data only.

The window rule (docs/harness.md): the solution's code runs only inside the guarded, timed window of a
call. Everything the host does with what `run` returned or raised after that window must therefore call
no method of a solution object: no `len`, iteration, `isinstance` (which may read `__class__`), `str` or
`repr` of anything the solution made. This module is called by the guard *inside* the window, before
the end event, and turns the solution's objects into harness values:

- `accept_result`: `run`'s result as a plain list of exact `torch.Tensor`s (a tensor, or an exact `tuple`
  or `list` of tensors, or None for a run whose outputs are all preallocated); anything else, a subclass
  of `list`, `tuple` or `torch.Tensor` included, is the solution's error (`SolutionRaised`).
- `describe_raised`: what the solution raised, as a status and a message built from builtin-typed data
  only (the class's name read through `type`'s own descriptor, arguments that are exactly `str`, `int`,
  `float` or `bool`, the solution file's name and line from the traceback's frames), cut to `MAX_TEXT` characters.

Reads go through the descriptors of `type`, `object` and `BaseException` themselves, so a class that
overrides `__class__`, `__name__`, `args` or `__traceback__` in Python is never asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

import torch

from workbench.harness.protocol.report import Violation

MAX_TEXT = 2000  # characters of a message from the solution (a longer one is cut, never a crash)
_TYPE_NAME = type.__dict__["__name__"]
_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_MRO = type.__dict__["__mro__"]
_EXC_ARGS = BaseException.__dict__["args"]
_EXC_TRACEBACK = BaseException.__dict__["__traceback__"]
_OBJECT_DICT_OF_EXC = BaseException.__dict__["__dict__"]
_PLAIN_SCALARS = (str, int, float, bool)
_COMPILE_ERRORS = frozenset({"CompilationError", "CompileTimeAssertionFailure"})


@dataclass(frozen=True)
class Returned:
    """`run`'s result, checked inside the window: its tensors, and whether it was one tensor (not a sequence)."""

    tensors: list[torch.Tensor]
    single: bool
    kind: str  # "tensor", "tuple", "list" or "none": what the host describes when the count is wrong


class SolutionRaised(Exception):
    """The solution's exception (or a refused result), described inside the window; harness data only."""

    def __init__(self, status: str, message: str, error_type: str, violations: list[Violation] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.violations = violations or []

    def reply(self, prefix: str = "") -> dict[str, object]:
        """The error reply to the checker (the rules broken before the failure included)."""
        return {
            "ok": False,
            "status": self.status,
            "message": prefix + self.message,
            "error_type": self.error_type,
            "violations": [v.model_dump() for v in self.violations[:64]],
        }


def type_name(cls: type) -> str:
    """A class's name through type's own descriptor (a metaclass property named __name__ is never asked)."""
    name = _TYPE_NAME.__get__(cls)
    return name if type(name) is str else "?"


def _module_of(cls: type) -> str:
    module = _TYPE_MODULE.__get__(cls)
    return module if type(module) is str else ""


def _plain_text(value: object) -> str:
    """str() of a builtin scalar, `<Name>` for anything else (whose methods are never called)."""
    if type(value) in _PLAIN_SCALARS:
        return {str: str.__str__, int: int.__repr__, float: float.__repr__, bool: bool.__repr__}[type(value)](value)
    return f"<{type_name(type(value))}>"


def cut(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 5] + "[...]"


def _message(exc: BaseException) -> str:
    args = _EXC_ARGS.__get__(exc)
    parts = [_plain_text(a) for a in args] if type(args) is tuple else []
    if not parts:  # exceptions that keep their text in an attribute of their own (Triton's CompilationError)
        fields = _OBJECT_DICT_OF_EXC.__get__(exc)
        message = fields.get("message") if type(fields) is dict else None
        parts = [message] if type(message) is str else []
    text = ", ".join(parts).strip()
    lines = text.splitlines()
    return cut(lines[0] if lines else "")


def _solution_line(exc: BaseException, solution_file: str) -> int | None:
    """The last line of the solution's file in the traceback (frames read directly: no linecache, no module loader)."""
    tb = _EXC_TRACEBACK.__get__(exc)
    line = None
    while type(tb) is TracebackType:
        if tb.tb_frame.f_code.co_filename == solution_file:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def describe_raised(exc: BaseException, solution_file: str) -> SolutionRaised:
    """The status and one-line message of an exception from the solution, from builtin-typed data only."""
    cls = type(exc)
    name = type_name(cls)
    line = _solution_line(exc, solution_file)
    where = f" ({solution_file.rpartition('/')[2]} line {line})" if line else ""  # the file by its name
    summary = cut(f"{name}: {_message(exc)}".rstrip(": ") + where)
    mro = _TYPE_MRO.__get__(cls)
    if name in _COMPILE_ERRORS or "triton.compiler" in _module_of(cls):  # a failure either way: the name only words it
        return SolutionRaised("compile_error", summary, name)
    if any(c is MemoryError or c is torch.OutOfMemoryError for c in mro) or "can't allocate memory" in summary:
        return SolutionRaised("runtime_error", "out of memory: " + summary, name)
    return SolutionRaised("runtime_error", summary, name)


def forget_traceback(exc: BaseException) -> None:
    """Drop the frames an exception holds (and the solution's objects in them) while still in the window."""
    _EXC_TRACEBACK.__set__(exc, None)


def accept_result(result: object) -> Returned:
    """`run`'s result as exact tensors, checked with `type(x) is ...` only; anything else is refused."""
    kind = type(result)
    if kind is torch.Tensor:
        return Returned([result], True, "tensor")  # type: ignore[list-item]
    if result is None:
        return Returned([], False, "none")
    if kind is tuple or kind is list:
        items = list(result)  # type: ignore[call-overload]  # an exact builtin: iterating runs no solution code
        strays = [type_name(type(item)) for item in items if type(item) is not torch.Tensor]
        if not strays:
            return Returned(items, False, type_name(kind))
        raise SolutionRaised(
            "runtime_error",
            f"run returned a {type_name(kind)} holding a {strays[0]}: return torch.Tensor objects only "
            "(a tensor, or a tuple or list of tensors)",
            "TypeError",
        )
    detail = type_name(kind)
    if any(base in (list, tuple, torch.Tensor, dict) for base in _TYPE_MRO.__get__(kind)[1:]):
        detail += " (a subclass of " + ", ".join(type_name(b) for b in _TYPE_MRO.__get__(kind)[1:-1]) + ")"
    raise SolutionRaised(
        "runtime_error",
        f"run returned a {detail}: return a torch.Tensor, or an exact tuple or list of tensors "
        "(the harness calls no method of what run returns)",
        "TypeError",
    )
