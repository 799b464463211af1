"""Emulated designs of fused_adamw's false-failure study (false_failure.toml): the reference's step with one of
its scalars changed (the states are updated in place, as run(...) updates them)."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any


def changed_step(ref: ModuleType, d: dict[str, Any], *, change: str) -> None:
    """The reference step with one mistake: ``no_weight_decay``, ``no_bias_correction`` (a step so large that the
    corrections are 1), ``beta2_for_beta1``, ``eps_inside_sqrt`` (sqrt(v_hat) + sqrt(eps) bounds sqrt(v_hat + eps)
    from above) or ``step_off_by_one``."""
    values = dict(d)
    if change == "no_weight_decay":
        values["weight_decay"] = 0.0
    elif change == "no_bias_correction":
        values["step"] = 10**9
    elif change == "beta2_for_beta1":
        values["beta1"] = d["beta2"]
    elif change == "eps_inside_sqrt":
        values["eps"] = math.sqrt(d["eps"])
    elif change == "step_off_by_one":
        values["step"] = d["step"] + 1
    else:
        raise ValueError(f"unknown change {change!r}")
    ref.reference(**values)
