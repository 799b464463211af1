"""Under the interpreter, a kernel's memory accesses stay inside its launch's tensors.

The Triton interpreter hands a kernel the host addresses of its tensor arguments and dereferences
whatever pointers the kernel computes (`triton._C.libtriton.interpreter.load`, `store`, `atomic_cas`,
`atomic_rmw`: every load, store, atomic, tensor-descriptor and block-pointer access of the builder ends
there). A pointer computed outside the tensors (an integer cast to a pointer, or an offset from a
tensor's pointer to `id(obj)`) therefore reads and writes the solution process's own memory, Python
objects included. On a GPU the same access faults (illegal address) or reaches device memory, never
the host's Python objects.

`install()` checks every access before it is made: each active lane's bytes (mask true; every lane of
an unmasked access) must lie inside the storage of one of the launch's tensor arguments (tensors,
tensors in tuples, tensor descriptors' bases: `untyped_storage().data_ptr()` to `+ nbytes()`). An access
outside raises `OutOfBoundsAccess` ("out-of-bounds memory access in kernel K: ..."), before any byte
is read or written; the launch fails with it. An access with no launch in progress (the C functions
called from Python) is refused the same way. The checks are vectorised: the smallest and largest
active address are compared with one range, and only when they straddle are all lanes looked up.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from triton._C.libtriton import interpreter as native
from triton.runtime import interpreter


class OutOfBoundsAccess(RuntimeError):
    """A kernel under the interpreter accessed memory outside its launch's tensor arguments."""


class _Launch:
    """One interpreted launch in progress: its kernel and the byte ranges it may access (merged,
    sorted, disjoint)."""

    __slots__ = ("ends", "ends_array", "kernel", "starts", "starts_array")

    def __init__(self, kernel: str, ranges: list[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for start, end in sorted(r for r in ranges if r[1] > r[0]):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.kernel = kernel
        self.starts = [s for s, _ in merged]
        self.ends = [e for _, e in merged]
        self.starts_array = np.array(self.starts, dtype=np.uint64)
        self.ends_array = np.array(self.ends, dtype=np.uint64)


class _State(threading.local):
    def __init__(self) -> None:
        self.launches: list[_Launch] = []


_state = _State()


def _tensors(value: Any, depth: int = 0) -> Iterator[Any]:
    """The tensors among a launch's (host) arguments: plain, in tuples and lists, descriptor bases."""
    if depth > 8:
        return
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item, depth + 1)
    elif isinstance(value, interpreter.TensorDescriptor):
        yield from _tensors(value.base, depth + 1)
    elif hasattr(value, "data_ptr"):
        yield interpreter._unwrap_tensor(value)


def _ranges(args: Any, kwargs: dict[str, Any]) -> list[tuple[int, int]]:
    ranges = []
    for tensor in _tensors([list(args), list(kwargs.values())]):
        try:
            storage = tensor.untyped_storage()
            start = int(storage.data_ptr())
            ranges.append((start, start + int(storage.nbytes())))
        except (AttributeError, RuntimeError, TypeError):
            continue  # not a tensor with a storage: it grants no memory
    return ranges


def _refuse(launch: _Launch | None, addresses: np.ndarray, bad: np.ndarray | None, itemsize: int, op: str) -> None:
    first = int(addresses[bad][0] if bad is not None else addresses[0])
    count = int(bad.sum()) if bad is not None else int(addresses.size)
    if launch is None:
        raise OutOfBoundsAccess(f"out-of-bounds memory access: interpreter {op} of {hex(first)} outside any kernel launch")
    raise OutOfBoundsAccess(
        f"out-of-bounds memory access in kernel {launch.kernel}: {op} of {itemsize} byte(s) at {hex(first)} "
        f"({count} lane(s)): address not inside any tensor argument"
    )


def check(pointers: Any, mask: Any, itemsize: int, op: str) -> None:
    """Raise OutOfBoundsAccess unless every active lane's `itemsize` bytes at `pointers` lie inside one
    of the current launch's tensor arguments."""
    addresses = np.asarray(pointers)
    if mask is not None:
        active = np.asarray(mask)
        if active.shape != addresses.shape:
            active = np.broadcast_to(active, addresses.shape)
        addresses = addresses[active.astype(bool, copy=False)]
    if addresses.size == 0:
        return
    addresses = addresses.astype(np.uint64, copy=False).reshape(-1)
    itemsize = max(1, int(itemsize))
    launches = _state.launches
    launch = launches[-1] if launches else None
    if launch is None or not launch.starts:
        _refuse(launch, addresses, None, itemsize, op)
        return
    low, high = int(addresses.min()), int(addresses.max())
    i = bisect.bisect_right(launch.starts, low) - 1
    if i >= 0 and high + itemsize <= launch.ends[i]:  # Python ints: no wrap-around
        return
    index = np.searchsorted(launch.starts_array, addresses, side="right").astype(np.int64) - 1
    inside = index >= 0
    limit = launch.ends_array[np.maximum(index, 0)]
    # address + itemsize <= end, without wrapping: end >= itemsize and address <= end - itemsize
    inside &= (limit >= np.uint64(itemsize)) & (addresses <= limit - np.uint64(itemsize))
    if not inside.all():
        _refuse(launch, addresses, ~inside, itemsize, op)


def _itemsize(array: Any) -> int:
    return int(np.asarray(array).dtype.itemsize)


def install() -> Callable[[], None]:
    """Check every memory access of interpreted kernels; returns a function that removes the checks."""
    load, store, atomic_cas, atomic_rmw = native.load, native.store, native.atomic_cas, native.atomic_rmw

    def checked_load(pointers: Any, mask: Any, other: Any, dtype: Any) -> Any:
        check(pointers, mask, np.dtype(dtype).itemsize, "load")
        return load(pointers, mask, other, dtype)

    def checked_store(pointers: Any, value: Any, mask: Any) -> Any:
        check(pointers, mask, _itemsize(value), "store")
        return store(pointers, value, mask)

    def checked_atomic_cas(pointers: Any, compare: Any, value: Any, sem: Any) -> Any:
        check(pointers, None, _itemsize(compare), "atomic_cas")
        return atomic_cas(pointers, compare, value, sem)

    def checked_atomic_rmw(op: Any, pointers: Any, value: Any, mask: Any, sem: Any) -> Any:
        check(pointers, mask, _itemsize(value), "atomic_rmw")
        return atomic_rmw(op, pointers, value, mask, sem)

    # on the native module itself, so every route to it (the interpreter's `_interpreter`, which the
    # interpreter also copies into each kernel's module globals) is checked
    native.load, native.store = checked_load, checked_store
    native.atomic_cas, native.atomic_rmw = checked_atomic_cas, checked_atomic_rmw

    executor = interpreter.GridExecutor
    original_init_args = executor._init_args_hst
    original_call = executor.__call__

    def init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        args_hst, kwargs_hst = original_init_args(self, args_dev, kwargs)
        name = getattr(self.fn, "__name__", "?")
        _state.launches.append(_Launch(name, _ranges(args_hst, kwargs_hst)))
        return args_hst, kwargs_hst

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        depth = len(_state.launches)
        try:
            return original_call(self, *args, **kwargs)
        except interpreter.InterpreterError as exc:
            cause: BaseException | None = exc
            for _ in range(32):  # the interpreter wraps a kernel's (and each helper's) error in its own
                if cause is None or isinstance(cause, OutOfBoundsAccess):
                    break
                cause = cause.__cause__
            if isinstance(cause, OutOfBoundsAccess):
                raise cause from None
            raise
        finally:
            del _state.launches[depth:]

    executor._init_args_hst = init_args_hst
    executor.__call__ = call

    def uninstall() -> None:
        native.load, native.store = load, store
        native.atomic_cas, native.atomic_rmw = atomic_cas, atomic_rmw
        executor._init_args_hst = original_init_args
        executor.__call__ = original_call

    return uninstall
