"""Input generation for the ``paged_gqa_decode`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

PAGE: int = 16  # tokens per KV-cache page (vLLM's block size)


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose base-10 logarithm is uniform on [log10(lo), log10(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.pow(10.0, math.log10(lo) + u * (math.log10(hi) - math.log10(lo)))


def ragged_lengths(B: int, L: int, gen: torch.Generator) -> torch.Tensor:
    """int64 ``[B]`` (on the CPU): lengths in ``[L / 2, L]`` whose sum is exactly ``3 B L / 4``.

    Each length starts uniform on ``[L / 2, L]``; one sequence, at a random index, is set to exactly
    ``L`` (the page table's width is then tight). The others are nudged towards the exact total
    ``3 B L / 4`` (the roofline's token count) without leaving ``[L / 2, L]``: first each in
    proportion to its room, then the last few tokens one at a time to random sequences. Lengths are
    therefore ragged and, in general, not multiples of the page size.
    """
    if B < 3 or L % PAGE or (3 * B * L) % 4:
        raise ValueError(f"need B >= 3 and L a multiple of {PAGE}, got B={B}, L={L}")
    lo, target = L // 2, 3 * B * L // 4
    lens = torch.randint(lo, L + 1, (B,), generator=gen, dtype=torch.int64)
    full = int(torch.randint(0, B, (1,), generator=gen))
    lens[full] = L
    free = torch.ones(B, dtype=torch.bool)
    free[full] = False
    diff = target - int(lens.sum())
    if diff:
        room = torch.where(free, (L - lens) if diff > 0 else (lens - lo), torch.zeros_like(lens))
        step = (room * abs(diff)) // max(1, int(room.sum()))  # proportional share, rounded down
        lens += step if diff > 0 else -step
        diff = target - int(lens.sum())
    while diff:  # fewer than B tokens remain: one each to random sequences that still have room
        sign = 1 if diff > 0 else -1
        can = free & ((lens < L) if sign > 0 else (lens > lo))
        idx = torch.nonzero(can).flatten()
        pick = idx[torch.randperm(idx.numel(), generator=gen)[: abs(diff)]]
        lens[pick] += sign
        diff = target - int(lens.sum())
    return lens


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"q", "k_cache", "v_cache", "page_table", "seq_lens", "scale"}`` from ``seed``.

    * ``q`` (bfloat16 ``[B, Hq, D]``): one decode token's queries, ``Z * c`` with ``Z`` iid standard
      normal and a scale ``c`` per (head, channel) log-uniform on [0.5, 2] (a few larger channels, as
      rotated queries have).
    * ``k_cache`` (bfloat16 ``[NP, 16, Hkv, D]``): keys ``Z * c + mu`` with ``c`` per (kv head,
      channel) log-uniform on [0.5, 2] and a per-channel offset ``mu`` (0.5 * normal): real keys have
      channel means. Every slot holds data, including the slots of pages no sequence owns and the
      slots past a sequence's length in its last page (stale entries of other requests), so attending
      to any of them is visibly wrong. The logits ``q . k * scale`` then have a spread of about 1.3,
      a softmax that neither is uniform nor picks one key.
    * ``v_cache`` (bfloat16 ``[NP, 16, Hkv, D]``): values ``Z * c + mu`` with ``c`` log-uniform on
      [0.5, 2] and a small channel mean ``mu`` (0.2 * normal).
    * ``page_table`` (int32 ``[B, L / 16]``): a random permutation of ``B * L / 16`` of the ``NP``
      pages: each sequence's pages are distinct, scattered over the cache and not in order. Entries
      past a sequence's last page are valid page indices too (pages it would grow into), which a
      kernel must not read.
    * ``seq_lens`` (int32 ``[B]``): ragged lengths in ``[L / 2, L]``, one exactly ``L``, summing to
      ``3 B L / 4`` (``ragged_lengths``).
    * ``scale``: ``1 / sqrt(D)``.

    Floats are sampled in float32 with a ``torch.Generator`` on ``device``; the lengths and the page
    table use a CPU generator.
    """
    B, Hq, Hkv, D, L, NP = (int(workload[a]) for a in ("B", "Hq", "Hkv", "D", "L", "NP"))
    if min(B, Hq, Hkv, D, L, NP) <= 0 or Hq % Hkv or L % PAGE or NP * PAGE < B * L:
        raise ValueError(f"bad workload {dict(workload)}: need Hkv | Hq, L % 16 == 0 and NP >= B * L / 16")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    cpu_gen = torch.Generator()
    cpu_gen.manual_seed(seed)
    q = torch.randn((B, Hq, D), generator=gen, device=dev, dtype=torch.float32)
    q = q.mul_(_log_uniform((1, Hq, D), 0.5, 2.0, gen, dev)).to(torch.bfloat16).contiguous()
    caches = []
    for mean_scale in (0.5, 0.2):  # k, then v
        scale_c = _log_uniform((Hkv, D), 0.5, 2.0, gen, dev)
        mu = mean_scale * torch.randn((Hkv, D), generator=gen, device=dev, dtype=torch.float32)
        cache = torch.empty((NP, PAGE, Hkv, D), dtype=torch.bfloat16, device=dev)
        step = max(1, (1 << 24) // (PAGE * Hkv * D))  # pages per chunk: float32 temporaries of 64 MB
        for p0 in range(0, NP, step):
            n = min(step, NP - p0)
            z = torch.randn((n, PAGE, Hkv, D), generator=gen, device=dev, dtype=torch.float32)
            cache[p0 : p0 + n] = z.mul_(scale_c).add_(mu).to(torch.bfloat16)
        caches.append(cache)
    MP = L // PAGE
    pages = torch.randperm(NP, generator=cpu_gen)[: B * MP].view(B, MP)
    lens = ragged_lengths(B, L, cpu_gen)
    return {
        "q": q,
        "k_cache": caches[0],
        "v_cache": caches[1],
        "page_table": pages.to(torch.int32).contiguous().to(dev),
        "seq_lens": lens.to(torch.int32).to(dev),
        "scale": 1.0 / math.sqrt(D),
    }
