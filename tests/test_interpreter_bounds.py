"""Under the interpreter a kernel's memory accesses stay inside its launch's tensors
(`workbench/harness/solution/interpreter_bounds.py`): a pointer computed outside them (an integer cast to a
pointer, or an offset from a tensor's pointer to a Python object) fails the launch instead of reading
or writing the solution process's own memory."""

from __future__ import annotations

import os

import pytest
import torch
import triton
import triton.language as tl

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1",
    reason="checks the Triton interpreter (set TRITON_INTERPRET=1; the suite's conftest does)",
)


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=0.0) + 1, mask=offs < n)


@triton.jit
def _offset_load_kernel(x_ptr, y_ptr, off, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + off + offs))


@triton.jit
def _offset_store_kernel(x_ptr, off, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + off + offs, tl.zeros([BLOCK], dtype=tl.int64))


@triton.jit
def _raw_address_kernel(address, y_ptr):
    tl.store(y_ptr, tl.load(address.to(tl.pointer_type(tl.int64))))


@triton.jit
def _atomic_kernel(x_ptr, off):
    tl.atomic_add(x_ptr + off, 1)


def test_accesses_inside_the_tensors_run(interpreter_fixed: None) -> None:
    x = torch.arange(100, dtype=torch.float32)
    y = torch.zeros(100)
    _copy_kernel[(2,)](x, y, 100, BLOCK=64)  # masked lanes past the end are not accesses
    assert torch.equal(y, x + 1)
    big = torch.arange(64, dtype=torch.int64)
    view = big[16:32]  # a view reaches its whole storage, as on the GPU
    out = torch.zeros(16, dtype=torch.int64)
    _offset_load_kernel[(1,)](view, out, -16, BLOCK=16)
    assert torch.equal(out, big[:16])


def test_a_pointer_to_a_python_object_is_refused(interpreter_fixed: None) -> None:
    from workbench.harness.solution.interpreter_bounds import OutOfBoundsAccess
    from workbench.harness.solution.window_exit import describe_raised

    slot = [None]
    t = torch.zeros(1, dtype=torch.int64)
    out = torch.zeros(16, dtype=torch.int64)
    off = (id(slot) - t.data_ptr()) // 8
    with pytest.raises(OutOfBoundsAccess, match="out-of-bounds memory access in kernel _offset_load_kernel"):
        _offset_load_kernel[(1,)](t, out, off, BLOCK=16)
    assert torch.equal(out, torch.zeros(16, dtype=torch.int64))
    with pytest.raises(OutOfBoundsAccess, match="address not inside any tensor argument") as caught:
        _offset_store_kernel[(1,)](t, off, BLOCK=16)
    assert slot == [None]
    raised = describe_raised(caught.value, __file__)
    status, summary = raised.status, raised.message
    assert status == "runtime_error" and "out-of-bounds memory access" in summary
    with pytest.raises(OutOfBoundsAccess):
        _raw_address_kernel[(1,)](id(slot) + 24, out)
    with pytest.raises(OutOfBoundsAccess):
        _atomic_kernel[(1,)](t, off)
    with pytest.raises(OutOfBoundsAccess):  # one element past the storage's end
        _offset_load_kernel[(1,)](t, out, 1, BLOCK=1)


def test_the_native_functions_refuse_outside_a_launch(interpreter_fixed: None) -> None:
    import numpy as np
    from triton._C.libtriton import interpreter as native

    from workbench.harness.solution.interpreter_bounds import OutOfBoundsAccess

    slot = [None]
    with pytest.raises(OutOfBoundsAccess, match="outside any kernel launch"):
        native.load(np.array([id(slot) + 24], dtype=np.uint64), np.array([True]), np.zeros(1, np.int64), np.dtype(np.int64))


def test_the_check_is_vectorised() -> None:
    import numpy as np

    from workbench.harness.solution import interpreter_bounds as bounds

    launch = bounds._Launch("k", [(1000, 1064), (2000, 2016), (1064, 1080)])  # the first and last merge
    assert launch.starts == [1000, 2000] and launch.ends == [1080, 2016]
    bounds._state.launches.append(launch)
    try:
        bounds.check(np.array([1000, 1072, 2008], dtype=np.uint64), None, 8, "load")  # two ranges
        bounds.check(np.array([2016, 1000], dtype=np.uint64), np.array([False, True]), 8, "load")
        for bad in ([2009], [999], [1080], [2**64 - 4]):
            with pytest.raises(bounds.OutOfBoundsAccess):
                bounds.check(np.array([1000, *bad], dtype=np.uint64), None, 8, "store")
    finally:
        bounds._state.launches.remove(launch)
