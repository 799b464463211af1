"""Narrow fixes for two faults of the Triton interpreter, applied only in the harness's solution
process under TRITON_INTERPRET=1.

- bfloat16 `tl.dot`: the interpreter stores bfloat16 as uint16 and hands the raw bits to numpy's
  matmul, so a bf16 dot multiplies integers. `install()` widens bf16 operands to float32 (exact: bf16
  is the top half of an fp32) before the product.
- `@triton.autotune`: benchmarking configs needs a GPU driver ("0 active drivers"). Under the
  interpreter every config gets the same timing without running, so the first (pruned) config is
  chosen, as it would be with a single config.
- Casts to FP8 (`x.to(tl.float8e4nv)`, `tl.float8e5`): the interpreter rounds the significand without
  carrying into the exponent, so a value that rounds up to the next power of two with an odd exponent
  field loses half its magnitude (127.9 -> 64; about 2% of a quantised tensor's values). `install()`
  casts float32, float16 and bfloat16 to FP8 as the GPU does (round to nearest even, saturating to the
  largest finite value, NaN kept), through torch's own conversion.
- Casts from float32 to bfloat16 (`x.to(tl.bfloat16)`, the interpreter's `cast_impl`): the interpreter
  drops the low 16 bits (rounds toward zero), where the GPU rounds to nearest even. Truncation doubles
  and biases the error of every bfloat16 store (a GEMM's output: 3.6e-3 instead of 1.1e-3 relative;
  an honest kernel that stores an intermediate in bfloat16 came within 0.9 of a 1e-2 bound). `install()`
  rounds to nearest even, as the GPU does (NaN kept, overflow to infinity).
- Integer overflow checks: the interpreter's options turn `sanitize_overflow` on, so every integer add,
  sub and mul of a kernel (its index arithmetic) is also done in int64 and compared with the type's
  range, and the result goes to `device_assert`, which drops it because `debug` is off. About 40% of an
  interpreted kernel's time went to this discarded check (the honest Muon kernels, 128x384 smoke
  workload, cProfile). `install()` turns it off while `debug` is off, which changes no outcome: a GPU
  build also drops the check unless `debug` is on.
- Kernels the GPU would not compile: the interpreter runs a kernel's Python body on numpy arrays, so
  it runs what no GPU build compiles (a tile's `.handle.data`, numpy on tiles). `install()` compiles
  every launched kernel with Triton's front end for an sm_90 GPU before interpreting it, once per
  kernel and specialisation (`interpreter_compile`); a kernel that does not compile fails to launch.
- libdevice: the interpreter runs none of `triton.language.extra.libdevice` (stubs returning None, or
  an extern call it does not implement). `install()` runs the CUDA module's functions with numpy
  (`interpreter_libdevice`, which lists those mapped).
- Time: each call of a jitted function (a kernel, and every `tl.sum`, `tl.max` or helper it calls) patches
  the language again, and each patch lists every member of five modules and classes with
  `inspect.getmembers` to find the builtins: 35% of an interpreted kernel's time (fused_linear_jsd's expert
  in process, cProfile). `install()` lists each one's builtins once (after the patches above) and patches
  the same members on each call, skipping any already patched, as the listing would.
- Memory outside the tensors: the interpreter's pointers are host addresses, so a pointer computed
  outside a kernel's tensors reads and writes the solution process's own memory (Python objects).
  `install()` checks every load, store and atomic against the launch's tensor arguments
  (`interpreter_bounds`); an access outside fails the launch, as it faults on the GPU.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import triton.language as tl
from triton.runtime import interpreter
from triton.runtime.autotuner import Autotuner

from workbench.harness.solution import interpreter_bounds, interpreter_compile, interpreter_libdevice


def _bf16_bits_to_fp32(data: np.ndarray) -> np.ndarray:
    return (data.astype(np.uint32) << 16).view(np.float32)


def _fp32_to_bf16_bits(data: np.ndarray) -> np.ndarray:
    """float32 values to bfloat16 bits (uint16), rounded to nearest even as the GPU's cvt.rn.bf16.f32: NaN
    stays a quiet NaN, values past the largest bfloat16 round to infinity."""
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    quiet_nan = ((bits >> 16) | 0x0040).astype(np.uint16)
    result: np.ndarray = np.where(np.isnan(data), quiet_nan, rounded).astype(np.uint16)
    return result


# FP8 formats the fix handles: (significand bits, exponent bias, largest finite value, NaN bits)
_FP8_FORMATS = {"fp8e4nv": (3, 7, 448.0, 0x7F), "fp8e5": (2, 15, 57344.0, 0x7F)}


def _fp8_bits(values: np.ndarray, mantissa: int, bias: int, largest: float, nan_bits: int) -> np.ndarray:
    """float32 values to FP8 bits, rounded to nearest even and saturated to +-largest, in numpy only (the
    cast runs inside the solution's call, where the guard counts any torch operation as the solution's)."""
    x = values.astype(np.float64)
    sign = np.signbit(x)
    magnitude = np.minimum(np.abs(np.nan_to_num(x, nan=0.0)), largest)
    smallest_exponent = 1 - bias  # of the normal numbers; below it the quantum stays 2^(1 - bias - mantissa)
    with np.errstate(divide="ignore"):
        exponent = np.maximum(np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0))), smallest_exponent)
    quantum = np.exp2(exponent - mantissa)
    rounded = np.rint(magnitude / quantum) * quantum  # exact: quantum is a power of two; rint ties to even
    normal = rounded >= 2.0**smallest_exponent
    with np.errstate(divide="ignore"):
        field = np.where(normal, np.floor(np.log2(np.where(normal, rounded, 1.0))) + bias, 0)
    significand = np.where(
        normal,
        (rounded / np.exp2(field - bias) - 1.0) * 2**mantissa,
        rounded / 2.0 ** (smallest_exponent - mantissa),
    )
    bits = (field.astype(np.int64) << mantissa) | significand.astype(np.int64)
    bits = np.where(np.isnan(x), nan_bits, bits) | (sign.astype(np.int64) << 7)
    result: np.ndarray = bits.astype(np.uint8).reshape(values.shape)
    return result


def _fp8_cast(data: np.ndarray, src: Any, dst: Any) -> np.ndarray | None:
    """`data` (the interpreter's storage of dtype `src`) cast to FP8 `dst` as uint8 bits, or None when the
    cast is not one this fix handles."""
    target = _FP8_FORMATS.get(getattr(dst, "name", ""))
    if target is None:
        return None
    if src == tl.bfloat16:
        values = _bf16_bits_to_fp32(data)
    elif src in (tl.float32, tl.float16):
        values = data.astype(np.float32)
    else:
        return None
    return _fp8_bits(values, *target)


def install() -> Callable[[], None]:
    """Patch the interpreter's dot and FP8 casts; returns a function that removes the patches."""
    builder = interpreter.InterpreterBuilder
    original = builder.create_dot

    def create_dot(self: Any, a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any) -> Any:
        if tl.bfloat16 in (a.dtype.scalar, b.dtype.scalar):
            a_data = _bf16_bits_to_fp32(a.data) if a.dtype.scalar == tl.bfloat16 else a.data.astype(np.float32)
            b_data = _bf16_bits_to_fp32(b.data) if b.dtype.scalar == tl.bfloat16 else b.data.astype(np.float32)
            product = np.matmul(a_data, b_data, dtype=np.float32).astype(d.data.dtype)
            return interpreter.TensorHandle(product + d.data, d.dtype.scalar)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    original_fp_to_fp = builder.create_fp_to_fp

    def create_fp_to_fp(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        bits = _fp8_cast(src.data, src.dtype.scalar, dst_type.scalar)
        if bits is None:
            return original_fp_to_fp(self, src, dst_type, rounding_mode)
        return interpreter.TensorHandle(bits, dst_type.scalar)

    original_cast = builder.cast_impl

    def cast_impl(self: Any, src: Any, dst_type: Any) -> Any:
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return interpreter.TensorHandle(_fp32_to_bf16_bits(src.data), dst_type.scalar)
        return original_cast(self, src, dst_type)

    builder.create_dot = create_dot
    builder.create_fp_to_fp = create_fp_to_fp
    builder.cast_impl = cast_impl
    restore_autotune = _first_config_autotune()
    restore_overflow_checks = _no_discarded_overflow_checks()
    restore_libdevice = interpreter_libdevice.install()
    restore_builtin_listing = _builtins_listed_once()  # after libdevice's patches, which add builtins
    restore_nested_patches = _restore_nested_patches()  # over libdevice's patches too
    restore_compile = _compile_before_interpreting()
    restore_bounds = interpreter_bounds.install()

    def uninstall() -> None:
        builder.create_dot = original
        builder.create_fp_to_fp = original_fp_to_fp
        builder.cast_impl = original_cast
        restore_autotune()
        restore_overflow_checks()
        restore_nested_patches()
        restore_builtin_listing()
        restore_libdevice()
        restore_compile()
        restore_bounds()

    return uninstall


def _restore_nested_patches() -> Callable[[], None]:
    """Make a launch undo what its device-function calls patched.

    Each launch patches triton.language for the interpreter (`_patch_lang`) and restores it when the
    launch ends, but a call of a @jit helper inside the kernel patches again and never restores: a helper
    of triton.language itself (tl.sum, tl.zeros) patches `triton.language.core`, which the kernel's own
    scope did not touch, so those patches outlive the launch. Harmless to the interpreter, but the code
    generator (`interpreter_compile`) must see triton.language unpatched. Here a helper's patches join
    the launch's scope (their first originals), which restores them with its own."""
    original = interpreter._patch_lang
    launches: list[Any] = []  # the scope of the launch in progress

    def patch_lang(fn: Any) -> Any:
        scope = original(fn)
        if launches:
            outer = launches[-1]
            changes = getattr(scope, "_changes", None)
            if isinstance(changes, list) and isinstance(getattr(outer, "_changes", None), list):
                seen = outer.__dict__.get("_wb_seen")
                if seen is None:
                    seen = outer.__dict__["_wb_seen"] = {(id(o), n) for o, n, _ in outer._changes}
                for obj, name, value in changes:
                    if (id(obj), name) not in seen:
                        seen.add((id(obj), name))
                        outer._changes.insert(0, (obj, name, value))
                changes.clear()
            else:
                outer.__dict__.setdefault("_wb_nested", []).append(scope)
            return scope
        launches.append(scope)
        restore = scope.restore

        def restore_all() -> None:
            try:
                for nested in reversed(scope.__dict__.get("_wb_nested", [])):
                    nested.restore()
                restore()
            finally:
                if launches and launches[-1] is scope:
                    launches.pop()

        scope.restore = restore_all
        return scope

    interpreter._patch_lang = patch_lang

    def uninstall() -> None:
        interpreter._patch_lang = original

    return uninstall


def _compile_before_interpreting() -> Callable[[], None]:
    """Compile each launched kernel for the GPU (once per kernel and specialisation) before the
    interpreter runs it; a kernel that does not compile raises `interpreter_compile.CompilationError`."""
    function = interpreter.InterpretedFunction
    original = function.run
    compiler = interpreter_compile.compiler()

    def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        compiler.check(self, args, kwargs)
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    function.run = run

    def uninstall() -> None:
        function.run = original

    return uninstall


def _builtins_listed_once() -> Callable[[], None]:
    """Patch the language's builtins from a listing made once per module or class, not on every call.

    The interpreter's `_patch_builtin(pkg, ...)` walks `inspect.getmembers(pkg)` on each call of a jitted
    function and patches every member that is a builtin. Here the builtins of the five it patches (the
    language, its core, its math, the tensor and the tensor descriptor classes) are listed now, unpatched,
    and each call patches those whose attribute is still the listed builtin: what the walk would find (a
    member already patched by an enclosing call is a lambda, no builtin, and is skipped by both). Anything
    else falls back to the walk."""
    original = interpreter._patch_builtin
    listed: dict[int, tuple[Any, list[tuple[str, Any]]]] = {}
    for pkg in (tl, tl.core, tl.math, tl.core.tensor, tl.core.tensor_descriptor_base):
        members = [(name, member) for name, member in inspect.getmembers(pkg) if tl.core.is_builtin(member)]
        listed[id(pkg)] = (pkg, members)

    def patch_builtin(pkg: Any, builder: Any, scope: Any) -> None:
        entry = listed.get(id(pkg))
        if entry is None or entry[0] is not pkg:
            original(pkg, builder, scope)
            return
        for name, member in entry[1]:
            if getattr(pkg, name, None) is member:
                interpreter._patch_attr(pkg, name, member, builder, scope)

    interpreter._patch_builtin = patch_builtin

    def restore() -> None:
        interpreter._patch_builtin = original

    return restore


def _no_discarded_overflow_checks() -> Callable[[], None]:
    """Turn `sanitize_overflow` off in the interpreter's options while `debug` is off (the check's
    assertion is dropped then anyway); a no-op on a Triton whose interpreter has no such options."""
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if builder is None or not dataclasses.is_dataclass(options) or isinstance(options, type):
        return lambda: None
    if getattr(options, "debug", True) or not getattr(options, "sanitize_overflow", False):
        return lambda: None
    builder.options = dataclasses.replace(options, sanitize_overflow=False)

    def uninstall() -> None:
        builder.options = options

    return uninstall


def _first_config_autotune() -> Callable[[], None]:
    """Make the autotuner's benchmark a no-op that ties every config, so the first one wins."""
    original = Autotuner._bench

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        return [0.0, 0.0, 0.0]

    Autotuner._bench = bench

    def uninstall() -> None:
        Autotuner._bench = original

    return uninstall
