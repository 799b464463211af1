"""Input generation for the ``fp8_block_gemm`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

GROUP: int = 128  # quantisation block: 1 x 128 (activations), 128 x 128 (weights)
FP8_MAX: float = 448.0  # largest finite float8_e4m3fn


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def quantise_blocks(x: torch.Tensor, block_rows: int, block_cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantise float32 ``x [R, C]`` to float8_e4m3fn per ``block_rows x block_cols`` block.

    Each block's scale is ``amax / 448`` (float32), so its largest magnitude lands on the largest
    finite FP8 value and the block's values fill the FP8 range; ``q = round(x / scale)``. Returns
    ``(q [R, C], scales [R / block_rows, C / block_cols])``, as DeepSeek-V3's quantisers do.
    """
    R, C = x.shape
    blocks = x.view(R // block_rows, block_rows, C // block_cols, block_cols)
    amax = blocks.abs().amax(dim=(1, 3), keepdim=True).clamp_min(1e-12)
    scale = amax / FP8_MAX
    q = (blocks / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(R, C).contiguous(), scale.view(R // block_rows, C // block_cols).contiguous()


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"A", "As", "B", "Bs"}`` deterministically from ``seed``.

    * Activations ``x [M, K]`` (float32 before quantisation): ``Z * r_i * c_j`` with ``Z`` iid standard
      normal, a per-token scale ``r_i`` log-uniform on [0.3, 3], a per-channel scale ``c_j``
      log-uniform on [0.5, 2], and about 1% of the channels (at least one, at random positions)
      outliers scaled by a further 8-30x, as LLM hidden states have. Quantised per token and per
      group of 128 channels: ``A = fp8(x / As)``, ``As = amax / 448`` (float32 ``[M, K/128]``).
      The outlier channels make the scales of one row differ from group to group.
    * Weights ``w [N, K]``: ``0.02 * Z * u_n * v_k * t_block`` with per-row ``u``, per-column ``v``
      and per-128x128-block ``t`` factors, each log-uniform on [0.5, 2] (trained weights have
      blocks of different range). Quantised per 128 x 128 block: ``B = fp8(w / Bs)``,
      ``Bs = amax / 448`` (float32 ``[N/128, K/128]``), which therefore vary along both N and K.

    Everything is sampled in float32 with a ``torch.Generator`` on ``device``.
    """
    M, N, K = int(workload["M"]), int(workload["N"]), int(workload["K"])
    if not (M > 0 and N > 0 and K > 0) or N % GROUP or K % GROUP:
        raise ValueError(f"need M > 0 and N, K positive multiples of {GROUP}, got M={M}, N={N}, K={K}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)

    x = torch.randn((M, K), generator=gen, device=dev, dtype=torch.float32)
    channel = _log_uniform((1, K), 0.5, 2.0, gen, dev)
    outliers = torch.randperm(K, generator=gen, device=dev)[: max(1, K // 100)]
    channel[0, outliers] *= _log_uniform((outliers.numel(),), 8.0, 30.0, gen, dev)
    x.mul_(_log_uniform((M, 1), 0.3, 3.0, gen, dev)).mul_(channel)
    A, As = quantise_blocks(x, 1, GROUP)
    del x

    w = torch.randn((N, K), generator=gen, device=dev, dtype=torch.float32)
    w.mul_(0.02 * _log_uniform((N, 1), 0.5, 2.0, gen, dev)).mul_(_log_uniform((1, K), 0.5, 2.0, gen, dev))
    t = _log_uniform((N // GROUP, 1, K // GROUP, 1), 0.5, 2.0, gen, dev)
    w.view(N // GROUP, GROUP, K // GROUP, GROUP).mul_(t)
    B, Bs = quantise_blocks(w, GROUP, GROUP)
    return {"A": A, "As": As, "B": B, "Bs": Bs}
