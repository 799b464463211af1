"""Narrow fixes for two faults of the Triton interpreter, applied only in the harness's solution
process under TRITON_INTERPRET=1.

- bfloat16 `tl.dot`: the interpreter stores bfloat16 as uint16 and hands the raw bits to numpy's
  matmul, so a bf16 dot multiplies integers. `install()` widens bf16 operands to float32 (exact: bf16
  is the top half of an fp32) before the product.
- `@triton.autotune`: benchmarking configs needs a GPU driver ("0 active drivers"). Under the
  interpreter every config gets the same timing without running, so the first (pruned) config is
  chosen, as it would be with a single config.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _bf16_bits_to_fp32(data: np.ndarray) -> np.ndarray:
    return (data.astype(np.uint32) << 16).view(np.float32)


def install() -> Callable[[], None]:
    """Patch the interpreter's dot; returns a function that removes the patch."""
    import triton.language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    original = builder.create_dot

    def create_dot(self: Any, a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any) -> Any:
        if tl.bfloat16 in (a.dtype.scalar, b.dtype.scalar):
            a_data = _bf16_bits_to_fp32(a.data) if a.dtype.scalar == tl.bfloat16 else a.data.astype(np.float32)
            b_data = _bf16_bits_to_fp32(b.data) if b.dtype.scalar == tl.bfloat16 else b.data.astype(np.float32)
            product = np.matmul(a_data, b_data, dtype=np.float32).astype(d.data.dtype)
            return interpreter.TensorHandle(product + d.data, d.dtype.scalar)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    builder.create_dot = create_dot
    restore_autotune = _first_config_autotune()

    def uninstall() -> None:
        builder.create_dot = original
        restore_autotune()

    return uninstall


def _first_config_autotune() -> Callable[[], None]:
    """Make the autotuner's benchmark a no-op that ties every config, so the first one wins."""
    from triton.runtime.autotuner import Autotuner

    original = Autotuner._bench

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        return [0.0, 0.0, 0.0]

    Autotuner._bench = bench

    def uninstall() -> None:
        Autotuner._bench = original

    return uninstall
