"""The runtime guard (defence in depth in the solution process): what counts as Triton's own torch call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from workbench.harness.solution.guard import TRITON_DIR, Guard, compare_snapshots, snapshot


def _triton_frame_caller() -> Any:
    """A function whose frames look like Triton's own code (as a hook called by the autotuner would)."""
    source = "def call(f, *args):\n    return f(*args)\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, str(Path(TRITON_DIR) / "_d2k_test_caller.py"), "exec"), namespace)
    return namespace["call"]


def _rules(guard: Guard, fn: Any) -> set[str]:
    _, record = guard.call(fn, require_launch=False)
    return {v.rule for v in record.violations}


def test_torch_math_handed_to_triton_is_still_the_solutions(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "solution.py", snapshot())
    call = _triton_frame_caller()
    x = torch.randn(8, 8)
    assert "torch_compute" in _rules(guard, lambda: call(torch.mm, x, x))
    assert "torch_compute" in _rules(guard, lambda: call(torch.Tensor.__matmul__, x, x))


def test_tritons_own_data_movement_is_exempt_but_not_the_solutions(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "solution.py", snapshot())
    call = _triton_frame_caller()
    x, y = torch.randn(8, 8), torch.empty(8, 8)
    assert _rules(guard, lambda: call(torch.Tensor.copy_, y, x)) == set()
    assert "torch_compute" in _rules(guard, lambda: y.copy_(x))


def test_scalar_reads_and_packing_python_values_are_not_glue(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "solution.py", snapshot())
    x = torch.randn(8, 8)
    assert "torch_compute" in _rules(guard, lambda: float(x[0, 0]))
    assert "torch_compute" in _rules(guard, lambda: torch.tensor([1.0, 2.0]) + 0)


def test_a_dunder_added_to_torch_tensor_is_a_patch() -> None:
    before = snapshot()
    original = torch.Tensor.__dict__.get("__eq__")
    torch.Tensor.__eq__ = lambda self, other: True  # type: ignore[assignment,method-assign]
    try:
        found = compare_snapshots(before, snapshot())
    finally:
        if original is None:
            del torch.Tensor.__eq__
        else:
            torch.Tensor.__eq__ = original  # type: ignore[method-assign]
    assert any("torch.Tensor.__eq__" in v.detail for v in found)
    assert compare_snapshots(before, snapshot()) == []
