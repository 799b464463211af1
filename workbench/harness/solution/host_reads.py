"""The host-read funnel: every route from tensor values to Python values that torch takes without
dispatching an aten op the guard's recorder could see, closed for the duration of each guarded call.

`int(t)`, `float(t)`, `bool(t)`, `t.item()` and comparisons reach the device through aten ops
(`_local_scalar_dense`, ...), which the recorder in guard.py sees. These do not: torch's formatter
(`repr`, `str`, `format`, f-strings and `print` all end in `torch._tensor_str._str`, which disables the
dispatch modes), `tolist`, `numpy`/`__array__`, DLPack, pickling (`__reduce_ex__`: `copy`, `pickle`,
`torch.save`), storages and the CUDA array interface. While a call runs, each is replaced by a stub that
lets Triton's own code (its autotuner reads its timings with `tolist`) and the harness's interpreter
fixes through, and otherwise records a `host_read` violation and raises, so the read never happens.

A solution may make no host read of a tensor value inside `run` (docs/harness.md, "Host reads").
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import torch
import torch._tensor_str
import torch.utils.dlpack
import triton

from workbench.harness.protocol.report import Violation

TORCH_DIR = str(Path(torch.__file__).resolve().parent)
# Callers whose reads are not the solution's: Triton's code, and the harness's own interpreter fixes.
TRUSTED_DIRS = (str(Path(triton.__file__).resolve().parent), str(Path(__file__).resolve().parent))
TENSOR_METHODS = (
    "tolist",
    "numpy",
    "__array__",
    "__dlpack__",
    "__reduce_ex__",
    "untyped_storage",
    "storage",
    "_typed_storage",
)
TENSOR_PROPERTIES = ("__cuda_array_interface__",)
MODULE_FUNCTIONS: tuple[tuple[Any, str], ...] = ((torch._tensor_str, "_str"), (torch.utils.dlpack, "to_dlpack"))


class HostReadRefused(RuntimeError):
    """Raised in place of a host read of tensor values inside a guarded call."""


def _solution_caller(frame: FrameType | None) -> FrameType | None:
    """The nearest frame outside torch and this file, or None when that frame is trusted code."""
    while frame is not None and frame.f_code.co_filename.startswith(TORCH_DIR):
        frame = frame.f_back
    if frame is not None and frame.f_code.co_filename.startswith(TRUSTED_DIRS):
        return None
    return frame


class HostReadFunnel:
    """Installs the stubs for one call (`install` / `uninstall`) and collects what they refused."""

    def __init__(self, solution_file: str) -> None:
        self.solution_file = solution_file
        self.violations: list[Violation] = []
        self._saved: list[tuple[Any, str, Any, bool]] = []  # (owner, name, original, was in the owner's own dict)

    def _stub(self, what: str, original: Callable[..., Any]) -> Callable[..., Any]:
        funnel = self

        def refuse(*args: Any, **kwargs: Any) -> Any:
            caller = _solution_caller(sys._getframe(1))
            if caller is None:
                return original(*args, **kwargs)
            line = caller.f_lineno if caller.f_code.co_filename == funnel.solution_file else None
            if all(v.op != what for v in funnel.violations):
                funnel.violations.append(
                    Violation(
                        rule="host_read",
                        detail=f"tensor values read on the host through {what} (formatting, tolist, numpy, "
                        "storages, pickling and DLPack read every element): only Triton kernels may compute",
                        line=line,
                        op=what,
                    )
                )
            raise HostReadRefused(f"{what} reads tensor values on the host, which run may not do")

        return refuse

    def _replace(self, owner: Any, name: str, value: Any) -> None:
        own = name in vars(owner)
        self._saved.append((owner, name, vars(owner)[name] if own else None, own))
        setattr(owner, name, value)

    def install(self) -> None:
        self.violations = []
        for name in TENSOR_METHODS:
            self._replace(torch.Tensor, name, self._stub(f"Tensor.{name}", getattr(torch.Tensor, name)))
        for name in TENSOR_PROPERTIES:
            getter = self._stub(f"Tensor.{name}", getattr(torch.Tensor, name).fget)
            self._replace(torch.Tensor, name, property(getter))
        for module, name in MODULE_FUNCTIONS:
            self._replace(module, name, self._stub(f"{module.__name__}.{name}", getattr(module, name)))

    def uninstall(self) -> None:
        while self._saved:
            owner, name, original, own = self._saved.pop()
            if own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)
