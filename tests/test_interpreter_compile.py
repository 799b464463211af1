"""The interpreter runs only what compiles: each launched kernel is compiled for the GPU first (issue 26,
item 7), and libdevice works under the interpreter (item 9)."""

from __future__ import annotations

import os

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.libdevice import fma as fused_multiply_add

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1",
    reason="checks the Triton interpreter (set TRITON_INTERPRET=1; the suite's conftest does)",
)


@triton.jit
def _twice(x):
    return x * 2


@triton.jit
def _compiles_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    # a helper of the solution's, triton.language's own @jit functions (as functions and methods)
    y = _twice(x) + tl.sum(x, axis=0) - x.sum(axis=0) + tl.cdiv(n, n)
    tl.store(y_ptr + offs, y, mask=offs < n)


@triton.jit
def _numpy_handle_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    x.handle.data[:] = x.handle.data * 3  # numpy on the interpreter's tile: no GPU build compiles this
    tl.store(y_ptr + offs, x, mask=offs < n)


@triton.jit
def _fma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, out2_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r)
    b = tl.load(b_ptr + r)
    c = tl.load(c_ptr + r)
    tl.store(out_ptr + r, libdevice.fma(a, b, c))
    tl.store(out2_ptr + r, fused_multiply_add(a, b, c) + libdevice.sqrt(libdevice.abs(c)) * 0)


@triton.jit
def _reduce_kernel(x_ptr, y_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(y_ptr + r, x + tl.sum(x, axis=0) + tl.max(x, 0))


def _line_of(text: str) -> int:
    source = open(__file__).read().splitlines()  # noqa: SIM115 (the test's own source)
    return next(i for i, line in enumerate(source, 1) if text in line)


def test_a_kernel_that_compiles_runs_and_is_compiled_once(interpreter_fixed: None) -> None:
    from workbench.harness.solution import interpreter_compile

    x = torch.randn(100)
    y = torch.empty(100)
    compiler = interpreter_compile.compiler()
    before = len(compiler.compiled)
    _compiles_kernel[(2,)](x, y, 100, BLOCK=64)
    _compiles_kernel[(2,)](x, y, 100, BLOCK=64)
    assert len(compiler.compiled) == before + 1  # one specialisation, compiled once
    chunks = [x[:64], x[64:]]
    want = torch.cat([2 * c + 1 for c in chunks])
    assert torch.allclose(y, want, atol=1e-5)
    _compiles_kernel[(4,)](x, y, 100, BLOCK=32)  # another constexpr: compiled again
    assert len(compiler.compiled) == before + 2


def test_numpy_on_a_tiles_handle_is_a_compile_error_naming_the_kernel_and_line(interpreter_fixed: None) -> None:
    from workbench.harness.solution.interpreter_compile import CompilationError
    from workbench.harness.solution.window_exit import describe_raised

    x = torch.randn(100)
    y = torch.zeros(100)
    with pytest.raises(CompilationError) as caught:
        _numpy_handle_kernel[(2,)](x, y, 100, BLOCK=64)
    message = str(caught.value)
    line = _line_of("x.handle.data[:] = x.handle.data * 3")
    assert "_numpy_handle_kernel" in message and f"line {line}" in message, message
    assert torch.equal(y, torch.zeros(100))  # never interpreted
    raised = describe_raised(caught.value, __file__)
    status, summary = raised.status, raised.message
    assert status == "compile_error" and "_numpy_handle_kernel" in summary
    with pytest.raises(CompilationError):  # a failure is remembered, and raised at every launch
        _numpy_handle_kernel[(2,)](x, y, 100, BLOCK=64)


def test_the_kernel_runs_unchecked_without_the_fix() -> None:
    """What the fix closes: the interpreter alone runs numpy on tiles."""
    x = torch.randn(100)
    y = torch.zeros(100)
    _numpy_handle_kernel[(2,)](x, y, 100, BLOCK=64)
    assert torch.allclose(y, 3 * x)


def test_libdevice_fma_runs_fused_under_the_interpreter(interpreter_fixed: None) -> None:
    from workbench.harness.solution.interpreter_libdevice import MAPPED

    # (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; multiplying then adding in float32 gives 0
    n = 16
    a = torch.full((n,), 1 + 2.0**-12)
    c = torch.full((n,), -(1 + 2.0**-11))
    out = torch.empty(n)
    out2 = torch.empty(n)
    _fma_kernel[(1,)](a, a, c, out, out2, N=n)
    assert out.tolist() == [2.0**-24] * n
    assert out2.tolist() == [2.0**-24] * n  # imported by name, too
    assert {"fma", "sqrt", "abs", "exp", "erf", "pow"} <= set(MAPPED)


def test_a_kernel_compiles_after_the_plain_interpreter_left_triton_language_patched() -> None:
    """A kernel run under the plain interpreter (an earlier test, or anything before the fix is installed)
    leaves triton.language.core patched (tl.sum's call patches it and nothing restores it); the compile
    step must still see triton.language as a GPU build does."""
    from workbench.harness.solution import interpreter_compile, interpreter_fix

    x = torch.randn(16)
    y = torch.empty(16)
    _reduce_kernel[(1,)](x, y, N=16)  # plain interpreter
    assert interpreter_compile._is_interpreter_patch("load", vars(tl.core)["load"])  # left patched
    uninstall = interpreter_fix.install()
    try:
        compiler = interpreter_compile.compiler()
        before = len(compiler.compiled)
        _reduce_kernel[(1,)](x, y, N=16)
        assert len(compiler.compiled) == before + 1
    finally:
        uninstall()
    assert torch.allclose(y, x + x.sum() + x.max(), atol=1e-5)
    assert interpreter_compile._is_interpreter_patch("load", vars(tl.core)["load"])  # put back as it was
