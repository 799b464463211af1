"""Emulated designs of moe_grouped_gemm_bwd's false-failure study (false_failure.toml): exact() on changed inputs
(or its results changed), rounded to bfloat16."""

from __future__ import annotations

import itertools
from types import ModuleType
from typing import Any

import torch

Outputs = tuple[torch.Tensor, torch.Tensor]
CHUNK = 16


def _rounded(outputs: Outputs) -> Outputs:
    return outputs[0].to(torch.bfloat16), outputs[1].to(torch.bfloat16)


def late_bounds(ref: ModuleType, made: dict[str, Any]) -> Outputs:
    offsets = made["offsets"].clone()
    offsets[1:-1] = (offsets[1:-1] + 1).clamp_max(int(offsets[-1]))
    return _rounded(ref.exact(**{**made, "offsets": offsets}))


def first_slot_only(ref: ModuleType, made: dict[str, Any]) -> Outputs:
    K = made["dy"].shape[0] // made["x"].shape[0]
    _, dw = ref.exact(**made)
    keep = made["dy"].clone()  # zero every permuted row whose slot is not its token's first
    keep[(made["sorted_slots"].long() % K) != 0] = 0
    dx1, _ = ref.exact(**{**made, "dy": keep})
    return _rounded((dx1, dw))


def tail_dropped(ref: ModuleType, made: dict[str, Any]) -> Outputs:
    dx, _ = ref.exact(**made)
    dy = made["dy"].clone()
    for lo, hi in itertools.pairwise(made["offsets"].tolist()):
        dy[lo + (hi - lo) // CHUNK * CHUNK : hi] = 0  # the rows past the last whole chunk
    _, dw = ref.exact(**{**made, "dy": dy})
    return _rounded((dx, dw))


def next_expert_w(ref: ModuleType, made: dict[str, Any]) -> Outputs:
    sizes = (made["offsets"][1:] - made["offsets"][:-1]).tolist()
    e = max(range(len(sizes)), key=lambda i: sizes[i])  # the biggest expert's dx rows use the next expert's w
    w = made["w"].clone()
    w[e] = made["w"][(e + 1) % w.shape[0]]
    dx, _ = ref.exact(**{**made, "w": w})
    return _rounded((dx, ref.exact(**made)[1]))


def stale_empty_dw(ref: ModuleType, made: dict[str, Any]) -> Outputs:
    dx, dw = _rounded(ref.exact(**made))
    sizes = made["offsets"][1:] - made["offsets"][:-1]
    empty, full = int((sizes == 0).nonzero()[0]), int(sizes.argmax())
    dw[empty] = dw[full]
    return dx, dw
