"""Input generation for the ``qknorm_rope_cache`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

PAGE: int = 16  # tokens per cache block
ROPE_THETA: float = 1_000_000.0  # Qwen3's rope_theta


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def _randint(lo: int, hi: int, gen: torch.Generator) -> int:
    """An integer uniform on [lo, hi] (drawn on the CPU generator)."""
    return int(torch.randint(lo, hi + 1, (1,), generator=gen))


def cos_sin_table(max_position: int, rotary_dim: int, device: torch.device) -> torch.Tensor:
    """vLLM's RotaryEmbedding._compute_cos_sin_cache: float32 ``[max_position, rotary_dim]``, cos | sin."""
    inv_freq = 1.0 / (ROPE_THETA ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32, device=device) / rotary_dim))
    t = torch.arange(max_position, dtype=torch.float32, device=device)
    freqs = torch.outer(t, inv_freq)
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1).contiguous()


def batch_layout(T: int, P: int, NB: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions and flat cache slots (int64 ``[T]`` each, on the CPU) of a mixed vLLM batch.

    The batch holds ``T // 64`` to ``T // 32`` decode tokens (at least one), each the next token of its
    own sequence at a random position in ``[0, P)``, followed by 1 to ``min(8, T // 16)`` prefill chunks
    of random lengths, each a run of consecutive positions from a random offset. Every sequence owns
    whole blocks drawn at random (without replacement) from the ``NB`` cache blocks, as a block table
    does, and its token at position ``p`` goes to slot ``block_table[p // 16] * 16 + p % 16``. So the
    slots are distinct, scattered over the cache, and neither positions nor slots are ``arange(T)``.
    """
    n_dec = min(T, _randint(max(1, T // 64), max(1, T // 32), gen))
    n_pre = T - n_dec
    n_chunks = _randint(1, max(1, min(8, T // 16)), gen) if n_pre else 0
    n_chunks = min(n_chunks, n_pre)
    lengths: list[int] = []
    if n_chunks:
        cuts = (torch.randperm(n_pre - 1, generator=gen)[: n_chunks - 1] + 1).sort().values.tolist()
        bounds = [0, *cuts, n_pre]
        lengths = [bounds[i + 1] - bounds[i] for i in range(n_chunks)]
    seqs = [(int(torch.randint(0, P, (1,), generator=gen)), 1) for _ in range(n_dec)]
    seqs += [(int(torch.randint(0, P - n + 1, (1,), generator=gen)), n) for n in lengths]
    need = sum((start + n - 1) // PAGE - start // PAGE + 1 for start, n in seqs)
    if need > NB:
        raise ValueError(f"the batch needs {need} cache blocks but the cache has NB={NB}")
    free = torch.randperm(NB, generator=gen).tolist()
    positions: list[torch.Tensor] = []
    slots: list[torch.Tensor] = []
    for start, n in seqs:
        pos = torch.arange(start, start + n, dtype=torch.int64)
        first = start // PAGE
        table = torch.tensor([free.pop() for _ in range((start + n - 1) // PAGE - first + 1)], dtype=torch.int64)
        positions.append(pos)
        slots.append(table[pos // PAGE - first] * PAGE + pos % PAGE)
    return torch.cat(positions), torch.cat(slots)


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build the eight inputs of ``run`` deterministically from ``seed``.

    * ``qkv`` (bfloat16 ``[T, (Hq + 2 Hkv) D]``): the fused QKV projection's output, ``Z * a * c`` with
      ``Z`` iid standard normal, a scale ``a`` per (token, head) log-uniform on [0.25, 4] (heads of one
      token differ, so a norm over the wrong extent is visibly wrong) and a scale ``c`` per channel
      log-uniform on [0.5, 2].
    * ``q_norm_weight``, ``k_norm_weight`` (bfloat16 ``[D]``): trained gains, log-uniform on [0.3, 3].
    * ``positions`` and ``slot_mapping`` (int64 ``[T]``): a mixed decode + chunked-prefill batch at
      random offsets with a random block table (``batch_layout``).
    * ``cos_sin_cache`` (float32 ``[P, R]``): vLLM's table for rope_theta 1e6 (cos in the first
      ``R / 2`` columns, sin in the rest); it does not depend on the seed.
    * ``k_cache``, ``v_cache`` (bfloat16 ``[NB, 16, Hkv, D]``): earlier tokens' entries, iid normal, so
      any write outside the token's slots or any zeroing changes a value that must stay.

    Sampling is in float32 with a ``torch.Generator`` on ``device``; the batch layout uses a CPU one.
    """
    T, Hq, Hkv, D = (int(workload[a]) for a in ("T", "Hq", "Hkv", "D"))
    R, P, NB = int(workload["R"]), int(workload["P"]), int(workload["NB"])
    if min(T, Hq, Hkv, D, R, P, NB) <= 0 or R % 2 or R > D or Hq % Hkv or T > P:
        raise ValueError(f"bad workload {dict(workload)}: need positive axes, even R <= D, Hkv | Hq, T <= P")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    cpu_gen = torch.Generator()
    cpu_gen.manual_seed(seed)
    H = Hq + 2 * Hkv
    x = torch.randn((T, H, D), generator=gen, device=dev, dtype=torch.float32)
    x.mul_(_log_uniform((T, H, 1), 0.25, 4.0, gen, dev)).mul_(_log_uniform((1, H, D), 0.5, 2.0, gen, dev))
    qkv = x.reshape(T, H * D).to(torch.bfloat16).contiguous()
    q_w = _log_uniform((D,), 0.3, 3.0, gen, dev).to(torch.bfloat16)
    k_w = _log_uniform((D,), 0.3, 3.0, gen, dev).to(torch.bfloat16)
    positions, slots = batch_layout(T, P, NB, cpu_gen)
    k_cache = torch.randn((NB, PAGE, Hkv, D), generator=gen, device=dev, dtype=torch.float32).to(torch.bfloat16)
    v_cache = torch.randn((NB, PAGE, Hkv, D), generator=gen, device=dev, dtype=torch.float32).to(torch.bfloat16)
    return {
        "qkv": qkv,
        "q_norm_weight": q_w,
        "k_norm_weight": k_w,
        "positions": positions.to(dev),
        "cos_sin_cache": cos_sin_table(P, R, dev),
        "slot_mapping": slots.to(dev),
        "k_cache": k_cache,
        "v_cache": v_cache,
    }
