"""Inputs of imported peer problems over the operator's domain, not only the peer's distribution (torch only).

The peers draw most inputs with `torch.rand` (values in [0, 1)): a kernel that copies its input passes an
imported ReLU on such values. An imported task's inputs.py therefore widens each floating input the problem's
forward reads (not a model's weights, not an output buffer), as its `DOMAIN` says, from a generator of its own
seeded from the harness's seed (the same values for the same seed on a device):

- `wide`: each value's sign flipped with probability 1/2, a quarter of the values multiplied by 4, and one in
  eight of the non-zero ones replaced by a special value (0, 1 or -1: where ReLU, HardTanh and their kin
  change branch);
- `signed`: the same without the special values (an operation that 0 or 1 takes outside its domain);
- `scaled`: the peer's signs kept, a quarter of the values multiplied by 4 (a logarithm, a square root);
- `peer`: the peer's values as drawn (an operation defined only on the peer's range: a matrix that must
  stay positive definite; labels or a mask: a handful of distinct values).

Every level keeps the structure of the peer's values: zeros stay zero (a triangular matrix stays
triangular) and a symmetric matrix stays symmetric.

The importer chooses each input's level by trying them on the CPU (the widest whose outputs stay finite where
the peer's are and stay within the tolerance under a rounding-level change of the inputs) and records why a
narrower one was kept. The importer copies this module's text into each imported task's inputs.py after
peer_runtime.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from workbench.harness.probe.peer_runtime import peer_seed  # (not embedded)

LEVELS = ("wide", "signed", "scaled", "peer")  # widest first
SPECIALS = (0.0, 1.0, -1.0, 0.0)
SCALE = 4.0
CHUNK = 1 << 22  # elements widened at once (bounds the temporaries on a large input)


def widen(value: Any, level: str, seed: int, name: str) -> Any:
    """`value` widened to `level` (see the module's docstring); anything but a floating tensor, and the level
    `peer`, leave it as it is. The tensor is changed in place where it is contiguous (a fresh input). What
    structure the peer's values have survives: a zero stays zero (a triangular matrix stays triangular, a
    masked value masked), and a symmetric matrix (the last two dimensions) stays symmetric."""
    if level == "peer" or not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return value
    if level not in LEVELS:
        raise ValueError(f"unknown input domain {level!r} (one of {', '.join(LEVELS)})")
    if value.device.type == "meta" or value.numel() == 0:
        return value
    if not value.is_contiguous():
        value = value.contiguous()
    gen = torch.Generator(device=value.device)
    gen.manual_seed(peer_seed(seed, f"domain:{name}"))
    if value.dim() >= 2 and value.shape[-1] == value.shape[-2] > 1 and torch.equal(value, value.transpose(-1, -2)):
        code = _codes(value.shape, value.device, gen)
        upper = torch.triu(code)
        _widen_values(value, upper + torch.triu(code, 1).transpose(-1, -2), level)
        return value
    flat = value.view(-1)
    for start in range(0, flat.numel(), CHUNK):
        chunk = flat[start : start + CHUNK]
        _widen_values(chunk, _codes(chunk.shape, chunk.device, gen), level)
    return value


def _codes(shape: torch.Size, device: torch.device, gen: torch.Generator) -> torch.Tensor:
    """One code per value: bit 0 the sign, bits 1-2 the scale (x4 where both are 0), bits 3-5 the special value
    (where all three are 0) with bits 1-2 choosing which."""
    return torch.randint(0, 64, shape, generator=gen, device=device, dtype=torch.uint8)


def _widen_values(values: torch.Tensor, code: torch.Tensor, level: str) -> None:
    factor = torch.ones(values.shape, device=values.device, dtype=values.dtype)
    factor.masked_fill_((code & 6) == 0, SCALE)
    if level in ("wide", "signed"):
        factor.masked_fill_((code & 1) == 1, -1.0)
        factor.masked_fill_((code & 7) == 1, -SCALE)
    nonzero = values != 0
    values.mul_(factor)
    if level == "wide":
        special = ((code & 56) == 0) & nonzero
        for index, number in enumerate(SPECIALS):
            values.masked_fill_(special & (((code >> 1) & 3) == index), number)


def widen_inputs(named: dict[str, Any], domain: Mapping[str, str], seed: int) -> dict[str, Any]:
    """run(...)'s arguments with each input that `domain` names widened to its level."""
    return {name: widen(value, domain[name], seed, name) if name in domain else value for name, value in named.items()}
