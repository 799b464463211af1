"""The runtime guard (defence in depth in the solution process): what counts as Triton's own torch call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
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


def test_the_guard_does_not_import_dynamo_on_the_first_guarded_op() -> None:
    # torch wraps a dispatch mode's __torch_dispatch__ to disable Dynamo, which imports torch._dynamo at the
    # first op of the first guarded call: seconds inside the solution's first call (7 s on the GPU machine)
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from pathlib import Path\n"
        "from workbench.harness.solution.guard import Guard, snapshot\n"
        "guard = Guard(Path('solution.py'), snapshot())\n"
        "_, record = guard.call(lambda: torch.empty(4).add_(1), require_launch=False)\n"
        "assert any(v.rule == 'torch_compute' for v in record.violations), record.violations\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert result.stdout.strip() == "False"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_profiled_call_names_kernels_that_are_not_triton_and_imports_no_inductor() -> None:
    # The profiled re-check's profiler sees every kernel the call ran; torch.profiler.profile would import
    # torch._inductor and torch._dynamo on start (2-6 s inside the re-check), torch.autograd's does not.
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from workbench.harness.solution.guard import CallRecord\n"
        "from workbench.harness.solution.host import call_profiler, foreign_kernels\n"
        "a = torch.randn(512, 512, device='cuda')\n"
        "torch.mm(a, a); torch.cuda.synchronize()\n"
        "profiler = call_profiler()\n"
        "profiler.__enter__()\n"
        "torch.mm(a, a); torch.cuda.synchronize()\n"
        "profiler.__exit__(None, None, None)\n"
        "found = foreign_kernels(profiler.function_events, CallRecord(0, [], []))\n"
        "assert [v.rule for v in found] == ['non_triton_kernel'], found\n"
        "print('torch._inductor' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "False"
