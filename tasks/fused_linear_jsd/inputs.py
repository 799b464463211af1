"""Input generation for the ``fused_linear_jsd`` task."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

IGNORE_INDEX: int = -100
SEQUENCES: int = 4  # packed sequences per call, each with its prompt prefix ignored
MAX_PROMPT_FRACTION: float = 0.125  # at most 1/8 of the tokens are ignored (the roofline's min_flops relies on it)
HEAD_CORRELATION: float = 0.9  # teacher head = 0.9 student head + noise (a teacher the student was distilled towards)
HIDDEN_CORRELATION: float = 0.8  # the same for the hidden states' generic part
PEAKS: int = 3  # candidate next tokens per position, each lifting its logit


def _log_uniform(shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float32 samples whose logarithm is uniform on [log(lo), log(hi)]."""
    u = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
    return torch.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))


def _labels(BT: int, V: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """Token ids in [0, V), with each packed sequence's prompt prefix (2% to 12.5% of it, at least one token)
    set to IGNORE_INDEX; at least one token of the call stays valid where BT >= 2 SEQUENCES. From 8 tokens
    per sequence on (every registered workload) at most 1/8 of the tokens are ignored."""
    labels = torch.randint(0, V, (BT,), generator=gen, device=device, dtype=torch.int64)
    bounds = [BT * s // SEQUENCES for s in range(SEQUENCES + 1)]
    fractions = 0.02 + (MAX_PROMPT_FRACTION - 0.02) * torch.rand((SEQUENCES,), generator=gen, device=device)
    position = torch.arange(BT, device=device)
    ignored = torch.zeros((BT,), dtype=torch.bool, device=device)
    for s in range(SEQUENCES):
        start, end = bounds[s], bounds[s + 1]
        prompt = torch.floor(fractions[s] * (end - start)).long().clamp_min(1)  # at least one token ignored
        ignored |= (position >= start) & (position < start + prompt)
    return torch.where(ignored, IGNORE_INDEX, labels)


def _beta(gen: torch.Generator) -> float:
    """The mixing weight: 0 (forward KL), 1 (reverse KL), 0.5 (the symmetric JSD) or uniform on [0.1, 0.9],
    each with probability 1/4."""
    pick, u = torch.rand((2,), generator=gen).tolist()
    if pick < 0.25:
        return 0.0
    if pick < 0.5:
        return 1.0
    if pick < 0.75:
        return 0.5
    return 0.1 + 0.8 * u


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """Build ``{"hs", "Ws", "ht", "Wt", "labels", "beta", "temperature"}`` deterministically from ``seed``.

    * ``Ws`` (bfloat16 ``[V, D]``): an LM head, iid normal entries of standard deviation ``1 / sqrt(D)``
      times a per-token (row) scale log-uniform on [0.6, 1.6]: row norms around 1, frequent and rare tokens
      with different norms.
    * ``Wt`` (bfloat16 ``[V, D]``): the teacher's head, ``0.9 Ws + sqrt(1 - 0.81) N`` (same row scales).
    * ``hs`` (bfloat16 ``[BT, D]``): final-norm hidden states, a generic part (iid normal times a per-token
      scale log-uniform on [1, 3]: base logits of standard deviation 1-3 over the vocabulary) plus, for
      ``PEAKS`` candidate tokens per position (the label first), a component along the head's row that
      lifts that token's logit by a height uniform on [0, 14] (the label's on [4, 14]): next-token
      distributions from nearly flat to nearly one-hot, as a language model's are.
    * ``ht`` (bfloat16 ``[BT, D]``): the teacher's hidden states, the student's generic part correlated 0.8
      with fresh noise, and the same candidate tokens with heights scaled by a factor uniform on [0.6, 1.4]
      (teacher and student agree on what is likely, not on how likely).
    * ``labels`` (int64 ``[BT]``): ``SEQUENCES`` packed sequences whose prompt prefixes (2% to 12.5% of each,
      at least one token) are ``IGNORE_INDEX``; the other labels are the first candidate token.
    * ``beta``: 0, 1, 0.5 or uniform on [0.1, 0.9] (``_beta``); ``temperature``: log-uniform on [0.7, 2].

    Sampled in float32 with a ``torch.Generator`` on ``device`` (the two scalars on the CPU).
    """
    BT, D, V = int(workload["BT"]), int(workload["D"]), int(workload["V"])
    if not (BT > 0 and D > 0 and V > 1):
        raise ValueError(f"need BT > 0, D > 0 and V > 1, got BT={BT}, D={D}, V={V}")
    dev = torch.device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    host = torch.Generator()
    host.manual_seed(seed)
    rho_w, rho_h = HEAD_CORRELATION, HIDDEN_CORRELATION

    row_scale = _log_uniform((V, 1), 0.6, 1.6, gen, dev) / math.sqrt(D)
    ws = torch.randn((V, D), generator=gen, device=dev).mul_(row_scale)
    wt = torch.randn((V, D), generator=gen, device=dev).mul_(row_scale * math.sqrt(1 - rho_w**2)).add_(ws, alpha=rho_w)
    Ws, Wt = ws.to(torch.bfloat16), wt.to(torch.bfloat16)
    del ws, wt

    labels = _labels(BT, V, gen, dev)
    tokens = torch.randint(0, V, (BT, PEAKS), generator=gen, device=dev)
    tokens[:, 0] = torch.where(labels == IGNORE_INDEX, tokens[:, 0], labels)
    height = 14.0 * torch.rand((BT, PEAKS), generator=gen, device=dev)
    height[:, 0] = 4.0 + 10.0 * torch.rand((BT,), generator=gen, device=dev)
    teacher_height = height * (0.6 + 0.8 * torch.rand((BT, PEAKS), generator=gen, device=dev))
    rows = Ws[tokens].float()  # [BT, PEAKS, D]: a hidden state along row r lifts logit r by its height
    rows.div_(rows.square().sum(dim=-1, keepdim=True))

    token_scale = _log_uniform((BT, 1), 1.0, 3.0, gen, dev)
    generic = torch.randn((BT, D), generator=gen, device=dev).mul_(token_scale)
    hs = generic + (height.unsqueeze(-1) * rows).sum(dim=1)
    noise = torch.randn((BT, D), generator=gen, device=dev).mul_(token_scale * math.sqrt(1 - rho_h**2))
    ht = generic.mul_(rho_h).add_(noise) + (teacher_height.unsqueeze(-1) * rows).sum(dim=1)

    beta = _beta(host)
    temperature = math.exp(math.log(0.7) + (math.log(2.0) - math.log(0.7)) * torch.rand((), generator=host).item())
    return {
        "hs": hs.to(torch.bfloat16).contiguous(),
        "Ws": Ws.contiguous(),
        "ht": ht.to(torch.bfloat16).contiguous(),
        "Wt": Wt.contiguous(),
        "labels": labels.contiguous(),
        "beta": beta,
        "temperature": temperature,
    }
