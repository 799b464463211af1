"""Input generation for the ``mamba2_ssd`` task.

Values as a trained Mamba-2 layer feeds its scan (the ``mamba_chunk_scan_combined`` call of ``Mamba2.forward``):

* ``x``, ``Bm``, ``Cm``: the convolved, SiLU-activated projections; standard normal (unit scale), bfloat16.
* ``A = -exp(A_log)``: Mamba-2 initialises ``A_log`` so that ``-A`` is uniform on [1, 16]; here per head,
  stratified over the heads (every shape, even with 2 heads, gets slow and fast decays).
* ``dt``: after the softplus and the bias. Mamba-2 initialises the bias so that ``dt`` is log-uniform on
  [1e-3, 1e-1] per head; the selection then moves it per token. Here each head's level is log-uniform on
  [1e-3, 1e-1] (stratified over the heads, shuffled independently of ``A``) times a per-token factor
  log-uniform on [1/2, 2]. So ``dt * A`` per step spans about -5e-4 (memory of thousands of steps) to -3
  (memory of one step): long and short memory, inside one chunk and across chunks.
* ``D``: the skip, uniform on [0.5, 1.5] per head (Mamba-2 initialises it to 1).

With these scales the state's contribution to ``y`` and the skip ``D x`` are of the same order, so every input
matters. Drawn from a ``torch.Generator`` on ``device`` seeded with ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

DT_RANGE = (1e-3, 1e-1)
A_RANGE = (1.0, 16.0)
DT_TOKEN_FACTOR = 2.0  # per-token factor log-uniform on [1 / 2, 2]


def _stratified(H: int, gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    """H values in [0, 1): one uniform draw in each of H equal bins, in a random order."""
    order = torch.randperm(H, generator=gen, device=dev).to(torch.float32)
    return (order + torch.rand(H, generator=gen, device=dev)) / H


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """``{"x", "dt", "A", "Bm", "Cm", "D"}``, deterministic in ``seed``."""
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    batch, T, H, P, G, N = (workload[k] for k in ("B", "T", "H", "P", "G", "N"))
    lo, hi = math.log(DT_RANGE[0]), math.log(DT_RANGE[1])
    dt_level = torch.exp(lo + (hi - lo) * _stratified(H, gen, dev))
    jitter = torch.exp((torch.rand((batch, T, H), generator=gen, device=dev) * 2 - 1) * math.log(DT_TOKEN_FACTOR))
    A = -(A_RANGE[0] + (A_RANGE[1] - A_RANGE[0]) * _stratified(H, gen, dev))
    D = 0.5 + torch.rand(H, generator=gen, device=dev)
    x = torch.randn((batch, T, H, P), generator=gen, device=dev)
    Bm = torch.randn((batch, T, G, N), generator=gen, device=dev)
    Cm = torch.randn((batch, T, G, N), generator=gen, device=dev)
    return {
        "x": x.to(torch.bfloat16).contiguous(),
        "dt": (dt_level * jitter).contiguous(),
        "A": A.contiguous(),
        "Bm": Bm.to(torch.bfloat16).contiguous(),
        "Cm": Cm.to(torch.bfloat16).contiguous(),
        "D": D.contiguous(),
    }
