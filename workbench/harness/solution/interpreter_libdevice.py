"""`triton.language.extra.libdevice` under the Triton interpreter.

The interpreter runs none of libdevice: the portable module's functions are stubs (`...`, so a call
returns None) that a GPU build maps to the CUDA module, and the CUDA module's functions end in
`create_extern_elementwise`, which the interpreter does not implement. `install()` makes both work the
way a GPU build resolves them: during each interpreted launch both modules' functions are the CUDA
ones run with the interpreter's semantic (so argument types, broadcasting and result types are
libdevice's own, and a type libdevice lacks fails as it does on the GPU), and the extern call computes
the function with numpy. MAPPED lists what is computed; the others (directed rounding of inexact
results, Bessel functions, erfinv and a few integer intrinsics) raise NotImplementedError naming the
function.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import triton.language.extra.libdevice as portable
from triton.language.extra.cuda import libdevice as cuda
from triton.runtime import interpreter

_F64 = np.float64


def _vectorized(fn: Callable[[float], float], on_error: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    def safe(x: float) -> float:
        try:
            return fn(x)
        except (ValueError, OverflowError):
            return on_error(x)

    vector = np.vectorize(safe, otypes=[_F64])

    def apply(x: np.ndarray) -> np.ndarray:
        result: np.ndarray = vector(x.astype(_F64))
        return result

    return apply


def _gamma_error(x: float) -> float:
    if x == 0:
        return math.copysign(math.inf, x)
    return math.inf if x > 0 else math.nan


def _round_half_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    result: np.ndarray = np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)
    return result


def _logb(x: np.ndarray) -> np.ndarray:
    _, exponent = np.frexp(x)
    with np.errstate(divide="ignore"):
        result: np.ndarray = np.where(x == 0, -np.inf, np.where(np.isfinite(x), (exponent - 1).astype(x.dtype), np.abs(x)))
    return result


def _ilogb(x: np.ndarray) -> np.ndarray:
    _, exponent = np.frexp(x)
    int_min, int_max = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    return np.where(x == 0, int_min, np.where(np.isnan(x), int_min, np.where(np.isinf(x), int_max, exponent - 1)))


def _bit_length(values: np.ndarray) -> np.ndarray:
    u = values.astype(np.uint64)  # of an unsigned array
    n = np.zeros(u.shape, dtype=np.int32)
    for shift in (32, 16, 8, 4, 2, 1):
        big = u >= (np.uint64(1) << np.uint64(shift))
        n += np.where(big, shift, 0).astype(np.int32)
        u = np.where(big, u >> np.uint64(shift), u)
    result: np.ndarray = n + (u > 0).astype(np.int32)
    return result


def _unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(f"uint{8 * x.dtype.itemsize}")


def _clz(x: np.ndarray) -> np.ndarray:
    return 8 * x.dtype.itemsize - _bit_length(_unsigned(x))


def _ffs(x: np.ndarray) -> np.ndarray:
    u = _unsigned(x)
    return _bit_length(u & (~u + u.dtype.type(1)))


def _popc(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = np.bitwise_count(_unsigned(x)).astype(np.int32)
    return result


def _mulhi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    bits = 8 * x.dtype.itemsize
    if bits == 32:
        wide = np.int64 if x.dtype.kind == "i" else np.uint64
        return (x.astype(wide) * y.astype(wide)) >> wide(32)
    high = [(int(a) * int(b)) >> 64 for a, b in zip(x.ravel().tolist(), y.ravel().tolist(), strict=True)]
    return np.array([h & (2**64 - 1) for h in high], dtype=np.uint64).view(x.dtype).reshape(x.shape)


def _mul24(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "i":
        a = (x.astype(np.int64) << 40) >> 40
        b = (y.astype(np.int64) << 40) >> 40
    else:
        a = x.astype(np.int64) & 0xFFFFFF
        b = y.astype(np.int64) & 0xFFFFFF
    return (a * b).astype(x.dtype)


def _hadd(x: np.ndarray, y: np.ndarray, carry: int) -> np.ndarray:
    return ((x.astype(np.int64) + y.astype(np.int64) + carry) >> 1).astype(x.dtype)


def _sad(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    return (np.abs(x.astype(np.int64) - y.astype(np.int64)) + z.astype(np.int64)).astype(x.dtype)


def _same_type(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A float function computed in float64 for accuracy (rounded to the result type afterwards)."""
    return lambda *xs: fn(*(x.astype(_F64) for x in xs))


def _to_int(rounding: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """Float to integer as the GPU converts: rounded, saturated, NaN to 0 (marked by returning float64;
    `_finish` saturates to the result type)."""
    return lambda x: rounding(x.astype(_F64))


_ROUNDINGS = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}

_UNARY: dict[str, Callable[..., np.ndarray]] = {
    "abs": np.abs,
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atanh": np.arctanh,
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1 / np.cbrt(x),
    "ceil": np.ceil,
    "floor": np.floor,
    "trunc": np.trunc,
    "rint": np.rint,
    "nearbyint": np.rint,
    "round": _round_half_away,
    "cos": np.cos,
    "cosh": np.cosh,
    "cospi": _same_type(lambda x: np.cos(np.pi * x)),
    "sin": np.sin,
    "sinh": np.sinh,
    "sinpi": _same_type(lambda x: np.sin(np.pi * x)),
    "tan": np.tan,
    "tanh": np.tanh,
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": _same_type(lambda x: np.power(10.0, x)),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "logb": _logb,
    "ilogb": _ilogb,
    "sqrt": np.sqrt,
    "sqrt_rn": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "rsqrt_rn": lambda x: 1 / np.sqrt(x),
    "rcp_rn": lambda x: 1 / x,
    "saturatef": lambda x: np.where(np.isnan(x), 0, np.clip(x, 0, 1)),
    "fast_expf": np.exp,
    "fast_exp10f": _same_type(lambda x: np.power(10.0, x)),
    "fast_logf": np.log,
    "fast_log2f": np.log2,
    "fast_log10f": np.log10,
    "fast_sinf": np.sin,
    "fast_cosf": np.cos,
    "fast_tanf": np.tan,
    "erf": _vectorized(math.erf, lambda x: math.nan),
    "erfc": _vectorized(math.erfc, lambda x: math.nan),
    "normcdf": _vectorized(lambda x: 0.5 * math.erfc(-x / math.sqrt(2.0)), lambda x: math.nan),
    "lgamma": _vectorized(math.lgamma, lambda x: math.inf),
    "tgamma": _vectorized(math.gamma, _gamma_error),
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinited": np.isfinite,
    "finitef": np.isfinite,
    "signbit": np.signbit,
    "popc": _popc,
    "clz": _clz,
    "ffs": _ffs,
    "float_as_int": lambda x: x.view(np.int32),
    "float_as_uint": lambda x: x.view(np.uint32),
    "int_as_float": lambda x: x.view(np.float32),
    "uint_as_float": lambda x: x.view(np.float32),
    "double_as_longlong": lambda x: x.view(np.int64),
    "longlong_as_double": lambda x: x.view(np.float64),
    # integer to float and double to float, rounded to nearest: numpy's own conversion (in `_finish`)
    **{
        f"{name}_rn": lambda x: x
        for name in (
            "int2float",
            "uint2float",
            "ll2float",
            "ull2float",
            "int2double",
            "uint2double",
            "ll2double",
            "ull2double",
            "double2float",
        )
    },
    # float to integer: exact whatever the rounding
    **{
        f"{src}2{dst}_{mode}": _to_int(rounding)
        for src in ("float", "double")
        for dst in ("int", "uint", "ll", "ull")
        for mode, rounding in _ROUNDINGS.items()
    },
}

_BINARY: dict[str, Callable[..., np.ndarray]] = {
    "add_rn": np.add,
    "sub_rn": np.subtract,
    "mul_rn": np.multiply,
    "div_rn": np.divide,
    "fast_dividef": np.divide,
    "atan2": np.arctan2,
    "copysign": np.copysign,
    "fdim": lambda x, y: np.where(np.isnan(x) | np.isnan(y), x + y, np.where(x > y, x - y, 0)),
    "fmod": np.fmod,
    "hypot": np.hypot,
    "rhypot": lambda x, y: 1 / np.hypot(x, y),
    "nextafter": np.nextafter,
    "pow": np.power,
    "fast_powf": np.power,
    "remainder": lambda x, y: np.vectorize(math.remainder, otypes=[_F64])(x.astype(_F64), y.astype(_F64)),
    "ldexp": np.ldexp,
    "scalbn": np.ldexp,
    "mulhi": _mulhi,
    "mul24": _mul24,
    "hadd": lambda x, y: _hadd(x, y, 0),
    "rhadd": lambda x, y: _hadd(x, y, 1),
}

_TERNARY: dict[str, Callable[..., np.ndarray]] = {"sad": _sad}
_FMA = ("fma", "fma_rn")  # through the interpreter's own fused multiply-add (one rounding)

MAPPED: tuple[str, ...] = tuple(sorted({*_UNARY, *_BINARY, *_TERNARY, *_FMA}))


class _Current:
    """The libdevice function being interpreted (the extern call only sees its symbol)."""

    names: list[str] = []


def _saturate(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    clipped = np.clip(np.nan_to_num(values, nan=0.0), float(info.min), float(info.max))
    # float(info.max) can round up past the type's range (2**63 for int64): saturate on the way out
    return np.where(clipped >= float(info.max), info.max, np.where(clipped <= float(info.min), info.min, clipped)).astype(dtype)


def _finish(result: np.ndarray, dtype: np.dtype) -> np.ndarray:
    result = np.asarray(result)
    if dtype.kind in "iu" and result.dtype.kind == "f":
        return _saturate(result, dtype)
    with np.errstate(all="ignore"):
        return result.astype(dtype)


def install() -> Callable[[], None]:
    """Make libdevice work in interpreted kernels; returns a function that undoes it."""
    builder_type = interpreter.InterpreterBuilder
    original_extern = builder_type.create_extern_elementwise
    original_patch_lang = interpreter._patch_lang
    semantic = interpreter.interpreter_semantic

    def create_extern_elementwise(
        self: Any, lib_name: Any, lib_path: Any, symbol: str, args: list[Any], ret_type: Any, is_pure: Any
    ) -> Any:
        name = _Current.names[-1] if _Current.names else symbol
        dtype = ret_type.scalar
        np_dtype = np.dtype(interpreter._get_np_dtype(dtype))
        if name in _FMA:
            return self.create_fma(*args)
        impl = _UNARY.get(name) if len(args) == 1 else _BINARY.get(name) if len(args) == 2 else _TERNARY.get(name)
        if impl is None:
            raise NotImplementedError(f"libdevice.{name} ({symbol}) is not available in the CPU interpreter")
        with np.errstate(all="ignore"):
            result = impl(*(a.data for a in args))
        return interpreter.TensorHandle(_finish(result, np_dtype), dtype)

    def interpreted(name: str, fn: Any) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("_semantic", None)
            _Current.names.append(name)
            try:
                return fn(*args, **kwargs, _semantic=semantic)
            finally:
                _Current.names.pop()

        call.__name__ = name
        return call

    functions = {
        name: interpreted(name, fn)
        for name, fn in vars(cuda).items()
        if inspect.isfunction(fn) and fn.__module__ == cuda.__name__ and not name.startswith("_")
    }
    by_function = {fn: functions[name] for name, fn in vars(cuda).items() if name in functions}
    stubs = {
        fn: functions[name]
        for name, fn in vars(portable).items()
        if inspect.isfunction(fn) and fn.__module__ == portable.__name__ and name in functions
    }

    class _Globals:
        """Attribute access to a function's globals, for the interpreter's patch scope (which restores
        what it set when the launch ends)."""

        def __init__(self, namespace: dict[str, Any]) -> None:
            object.__setattr__(self, "namespace", namespace)

        def __getattr__(self, name: str) -> Any:
            try:
                return self.namespace[name]
            except KeyError:
                raise AttributeError(name) from None

        def __setattr__(self, name: str, value: Any) -> None:
            self.namespace[name] = value

        def __delattr__(self, name: str) -> None:
            self.namespace.pop(name, None)

    views: dict[int, _Globals] = {}  # one per namespace, so that a scope records each entry once

    def patch_lang(fn: Any) -> Any:
        scope = original_patch_lang(fn)
        for module in (portable, cuda):
            if module.__dict__.get("fma") is functions["fma"]:
                continue  # patched already by the launch this call is part of
            for name, replacement in functions.items():
                if name in module.__dict__:
                    scope.set_attr(module, name, replacement)
        namespace = getattr(fn, "__globals__", None)
        if isinstance(namespace, dict):
            imported = [(k, v) for k, v in namespace.items() if inspect.isfunction(v) and (v in stubs or v in by_function)]
            view = views.get(id(namespace))
            if view is None or view.namespace is not namespace:
                view = views[id(namespace)] = _Globals(namespace)
            for key, value in imported:  # `from triton.language.extra.libdevice import fma`
                scope.set_attr(view, key, stubs.get(value) or by_function[value])
        return scope

    builder_type.create_extern_elementwise = create_extern_elementwise
    interpreter._patch_lang = patch_lang

    def uninstall() -> None:
        builder_type.create_extern_elementwise = original_extern
        interpreter._patch_lang = original_patch_lang

    return uninstall
