"""The replies of the untrusted solution process, as the checker accepts them.

Every message the solution process sends is validated by one of these models before any field is read:
strict types (a shape is a list of ints, never an int; an alias list is a list of names, never a dict),
no unknown fields, finite non-negative times and counts. A reply that does not validate is the
solution's failure (`protocol_violation`): the process runs the solution's code, which can rewrite what
it sends. Text that came from the solution (an exception's message, its printed output) is cut to a few
lines before it reaches a report (`cut_message`), so a report cannot carry what the process read.
"""

from __future__ import annotations

import math
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator, model_validator

from workbench.harness.protocol.report import Violation

MESSAGE_LINES = 4  # lines of a message from the solution process kept in a report
MESSAGE_CHARS = 400  # characters of it, at most
MAX_KERNEL_NAMES = 64  # distinct Triton kernel names one call may report
MAX_KERNEL_NAME = 200  # characters of one name


def cut_message(text: str, lines: int = MESSAGE_LINES, chars: int = MESSAGE_CHARS) -> str:
    """The first `lines` non-blank lines of text, at most `chars` characters, marked where cut."""
    kept = [line.rstrip() for line in str(text).splitlines() if line.strip()]
    cut = len(kept) > lines
    out = "\n".join(kept[:lines])
    if len(out) > chars:
        out, cut = out[:chars], True
    return out + (" [...]" if cut else "")


class _Reply(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ErrorReply(_Reply):
    """A request the solution failed (an exception in its code, or a request it could not serve)."""

    ok: Literal[False]
    status: str = "runtime_error"
    message: str = "the solution failed"
    error_type: str | None = None
    violations: list[Violation] = Field(default_factory=list, max_length=64)  # rules the call broke before it failed


class OkReply(_Reply):
    ok: Literal[True]


class DigestsReply(OkReply):
    """`digests`: one 64-bit digest per tensor input asked for (transport.digest)."""

    digests: list[StrictInt]


class ViolationsReply(OkReply):
    """`load` and `capture`: what the guard saw while the solution's code ran."""

    violations: list[Violation] = []


class ReleaseReply(OkReply):
    """`release`: the most device memory the process had allocated since the previous release (bytes; 0 on a CPU)."""

    peak_bytes: StrictInt = Field(ge=0)


class OutputDescription(_Reply):
    """One output of a call as the solution process describes it (`kind` other than "tensor": not a tensor)."""

    kind: str = Field(max_length=100)
    shape: list[int] | None = None
    dtype: str | None = Field(default=None, max_length=40)
    device: str | None = Field(default=None, max_length=40)
    contiguous: bool | None = None
    aliases: list[str] = []

    @model_validator(mode="after")
    def _complete_tensor(self) -> OutputDescription:
        if self.kind == "tensor" and (self.shape is None or self.dtype is None or self.device is None or self.contiguous is None):
            raise ValueError("a tensor's description needs shape, dtype, device and contiguous")
        return self


def _finite_non_negative(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise ValueError("must be a finite number >= 0")
    return value


class CallReplyModel(OkReply):
    """One call: the device time between its events, the host's times, the launches and the outputs."""

    ms: float
    host_ms: float
    launch_ms: float
    hidden_ms: float = 0.0  # device time the call's work ran past its end event on other streams (stream_tails.py)
    served_ms: float = 0.0  # from reading the request to sending this reply, in the process (diagnostic only)
    launches: int = Field(ge=0)
    launch_counts: dict[str, int]  # launches per Triton kernel name (a name's count counted in `launches`)
    violations: list[Violation]
    outputs: list[OutputDescription]
    mutated: list[str]

    _finite = field_validator("ms", "host_ms", "launch_ms", "hidden_ms", "served_ms")(_finite_non_negative)

    @field_validator("launch_counts")
    @classmethod
    def _bounded_counts(cls, value: dict[str, int]) -> dict[str, int]:
        if len(value) > MAX_KERNEL_NAMES:
            raise ValueError(f"more than {MAX_KERNEL_NAMES} kernel names")
        if any(len(name) > MAX_KERNEL_NAME or count < 1 for name, count in value.items()):
            raise ValueError(f"a kernel name over {MAX_KERNEL_NAME} characters or a count below 1")
        return value


class RecheckReply(OkReply):
    changed: int = Field(ge=0)
    kept: int = Field(ge=0)


class ProtocolViolation(Exception):
    """A reply of the solution process that does not follow the protocol."""


R = TypeVar("R", bound=_Reply)


def parse(model: type[R], reply: dict[str, object]) -> R:
    """`reply` validated as `model`, or ProtocolViolation naming the first problem (never the values)."""
    try:
        return model.model_validate(reply)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
        raise ProtocolViolation(f"malformed {model.__name__} ({where}: {first.get('msg', 'invalid')})") from None
