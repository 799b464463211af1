"""Reference semantics for the ``fused_linear_jsd`` task.

A student and a frozen teacher each project their hidden states through a linear head onto the
vocabulary; the loss is the generalised Jensen-Shannon divergence between the two next-token
distributions, averaged over the tokens whose label is not ``IGNORE_INDEX``. Per token ``i`` (``T`` the
temperature, ``beta`` the mixing weight)::

    log q = log_softmax(hs[i] @ Ws.T / T)          # student
    log p = log_softmax(ht[i] @ Wt.T / T)          # teacher
    m     = beta p + (1 - beta) q                  # the mixture
    jsd_i = beta KL(p || m) + (1 - beta) KL(q || m)   for 0 < beta < 1
    jsd_i = KL(p || q)                              for beta == 0 (forward KL)
    jsd_i = KL(q || p)                              for beta == 1 (reverse KL)
    loss  = sum over valid i of jsd_i / (number of valid i)

(the form of TRL's ``generalized_jsd_loss`` and Liger-Kernel's ``LigerFusedLinearJSD``: beta weights the
teacher's divergence from the mixture). The gradient with respect to the student's logits ``z = hs @ Ws.T``
(the teacher is frozen) is, per valid token with ``w_i = 1 / (T * n_valid)``::

    0 < beta < 1:  dz = w_i (1 - beta) q (log q - log m - KL(q || m))
    beta == 0:     dz = w_i (q - p)
    beta == 1:     dz = w_i q (log q - log p - KL(q || p))

and zero for ignored tokens; then ``dhs = dz @ Ws`` and ``dWs = dz.T @ hs``.

``library`` is the fused call a practitioner has instead (Liger-Kernel's ``LigerFusedLinearJSD``), timed as a
second baseline on a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

IGNORE_INDEX: int = -100  # labels equal to this mark tokens left out of the loss (prompt tokens, padding)
EXACT_CHUNK_ELEMS: int = 1 << 26  # logit elements per float64 chunk of exact() (0.5 GB per [rows, V] matrix)
LIGER_VERSION: str = "0.8.5"  # the liger-kernel release library() calls (scripts/fetch_device_wheels.sh)


def _check(
    hs: torch.Tensor,
    Ws: torch.Tensor,
    ht: torch.Tensor,
    Wt: torch.Tensor,
    labels: torch.Tensor,
    beta: float,
    temperature: float,
) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if hs.ndim != 2 or ht.shape != hs.shape or Ws.ndim != 2 or Wt.shape != Ws.shape or Ws.shape[1] != hs.shape[1]:
        raise ValueError(
            f"need hs, ht [BT, D] and Ws, Wt [V, D], got {tuple(hs.shape)}, {tuple(ht.shape)}, "
            f"{tuple(Ws.shape)}, {tuple(Wt.shape)}"
        )
    if labels.shape != (hs.shape[0],) or labels.dtype != torch.int64:
        raise ValueError(f"labels must be int64 [BT], got {labels.dtype} {tuple(labels.shape)}")
    if any(t.dtype != torch.bfloat16 for t in (hs, Ws, ht, Wt)):
        raise ValueError("hs, Ws, ht and Wt must be bfloat16")
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must lie in [0, 1], got {beta}")
    if not (math.isfinite(temperature) and temperature > 0.0):
        raise ValueError(f"temperature must be positive and finite, got {temperature}")


def _student_logit_grad(logq: torch.Tensor, logp: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token divergence ``jsd [rows]`` and the gradient with respect to the scaled student logits
    ``z / T`` (unweighted: before the ``1 / (T n_valid)`` and the mask), from the two log-probabilities.

    Works in the dtype of its inputs and overwrites them where it can (the [rows, V] matrices dominate the
    memory: at 8192 x 128256 each float32 one is 4.2 GB)."""
    if beta == 0.0:  # forward KL(p || q): jsd = sum p (log p - log q); dz = q - p
        p = logp.exp()
        jsd = (p * (logp - logq)).sum(dim=-1)
        return jsd, logq.exp_().sub_(p)
    if beta == 1.0:  # reverse KL(q || p): jsd = sum q (log q - log p); dz = q (log q - log p - jsd)
        d = logq - logp
        q = logq.exp_()
        jsd = (q * d).sum(dim=-1)
        return jsd, d.sub_(jsd.unsqueeze(-1)).mul_(q)
    logm = torch.logaddexp(logp + math.log(beta), logq + math.log1p(-beta))
    q = logq.exp()
    d = logq.sub_(logm)  # log q - log m, in logq's storage
    kl_q = (q * d).sum(dim=-1)
    kl_p = logp.exp().mul_(logp.sub_(logm)).sum(dim=-1)  # p (log p - log m), logp's storage reused
    jsd = beta * kl_p + (1.0 - beta) * kl_q
    return jsd, d.sub_(kl_q.unsqueeze(-1)).mul_(q).mul_(1.0 - beta)


def reference(
    hs: torch.Tensor,
    Ws: torch.Tensor,
    ht: torch.Tensor,
    Wt: torch.Tensor,
    labels: torch.Tensor,
    beta: float,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eager PyTorch as distillation code writes it: both [BT, V] logit matrices from the heads' bfloat16
    matmuls, log_softmax in float32, the divergence from the two log-probabilities and their mixture, and
    the gradient autograd would give (the explicit formula, written out because autograd's saved float32
    intermediates would not fit beside the inputs at 8192 x 128256: about 50 GB against 25 GB here).

    ``hs``, ``ht``: bfloat16 ``[BT, D]``; ``Ws``, ``Wt``: bfloat16 ``[V, D]``; ``labels``: int64 ``[BT]``.
    Returns ``(loss, dhs, dWs)``: a float32 scalar (0-d), bfloat16 ``[BT, D]`` and bfloat16 ``[V, D]``.
    """
    _check(hs, Ws, ht, Wt, labels, beta, temperature)
    valid = labels != IGNORE_INDEX
    n_valid = valid.sum()
    logq = torch.log_softmax(torch.matmul(hs, Ws.T).float().div_(temperature), dim=-1)
    logp = torch.log_softmax(torch.matmul(ht, Wt.T).float().div_(temperature), dim=-1)
    jsd, dz = _student_logit_grad(logq, logp, beta)
    del logq, logp
    loss = torch.where(valid, jsd, 0.0).sum() / n_valid
    weight = valid.float().div_(n_valid * temperature)  # d loss / d jsd_i, and d(z / T) / dz
    dz_bf16 = dz.mul_(weight.unsqueeze(-1)).to(torch.bfloat16)  # autograd casts it to the logits' dtype
    del dz
    return loss, torch.matmul(dz_bf16, Ws), torch.matmul(dz_bf16.T, hs)


def exact(
    hs: torch.Tensor,
    Ws: torch.Tensor,
    ht: torch.Tensor,
    Wt: torch.Tensor,
    labels: torch.Tensor,
    beta: float,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float64 oracle: the same formulas with every intermediate in float64 (outputs float64), in chunks
    of tokens (at most ``EXACT_CHUNK_ELEMS`` logits each) so that the float64 matrices fit on a GPU."""
    _check(hs, Ws, ht, Wt, labels, beta, temperature)
    BT, V = hs.shape[0], Ws.shape[0]
    valid = labels != IGNORE_INDEX
    n_valid = valid.sum().double()
    ws, wt = Ws.double(), Wt.double()
    total = torch.zeros((), dtype=torch.float64, device=hs.device)
    dhs = torch.empty(hs.shape, dtype=torch.float64, device=hs.device)
    dWs = torch.zeros(Ws.shape, dtype=torch.float64, device=hs.device)
    step = max(1, EXACT_CHUNK_ELEMS // V)
    for r0 in range(0, BT, step):
        rows = slice(r0, min(r0 + step, BT))
        h = hs[rows].double()
        logq = torch.log_softmax(h @ ws.T / temperature, dim=-1)
        logp = torch.log_softmax(ht[rows].double() @ wt.T / temperature, dim=-1)
        jsd, dz = _student_logit_grad(logq, logp, beta)
        ok = valid[rows]
        total += torch.where(ok, jsd, 0.0).sum()
        dz.mul_((ok.double() / (n_valid * temperature)).unsqueeze(-1))
        dhs[rows] = dz @ ws
        dWs.addmm_(dz.T, h)
    return total / n_valid, dhs, dWs


def library(
    hs: torch.Tensor,
    Ws: torch.Tensor,
    ht: torch.Tensor,
    Wt: torch.Tensor,
    labels: torch.Tensor,
    beta: float,
    temperature: float,
    op: Callable[..., torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The library call a practitioner has instead (task.toml ``[library]``): Liger-Kernel's fused linear JSD,
    ``liger_kernel.transformers.functional.liger_fused_linear_jsd`` (a thin wrapper of
    ``LigerFusedLinearJSDFunction``, what the ``LigerFusedLinearJSD`` module calls), liger-kernel 0.8.5, with
    its default ``accum_dtype=None``; ``jsd_beta`` is ``beta`` (the same convention: the teacher's weight in
    the mixture), ``shift_labels`` the labels. Returns what ``reference`` returns: ``(loss, dhs, dWs)``,
    float32 0-d, bfloat16 ``[BT, D]``, bfloat16 ``[V, D]``.

    Its dataflow: the forward computes the loss and the student's gradients. It reads the count of valid
    tokens to the host once (``.item()``), then walks the tokens in chunks of ``next_pow2(ceil(BT / ceil(V /
    D)))`` rows on a Hopper GPU (256 at bt8192_d4096_v128256: 32 chunks); per chunk both heads' logits as
    float32 outputs of bfloat16 GEMMs (cuBLAS, ``torch.mm(out_dtype=float32)``; on a CPU the bfloat16 product
    cast up), divided by the temperature, both ``log_softmax`` and the student's ``softmax`` (torch), one
    Triton program per row for the divergence and ``d loss / d log q`` (scaled by ``1 / n``, zero on ignored
    rows), the softmax's Jacobian in torch (a row sum, a product, a division by the temperature), the cast to
    bfloat16, ``dhs_c = dz @ Ws`` (cuBLAS) and ``dWs.addmm_(dz^T, hs_c)`` into a bfloat16 ``dWs`` (one read and
    one write of ``dWs`` per chunk). The backward only hands the stored gradients back. ``hs`` and ``Ws``
    enter as leaves that require grad (without it Liger computes no ``dWs``); the teacher's do not. ``op``
    replaces the Liger call (tests: the same contract elsewhere)."""
    _check(hs, Ws, ht, Wt, labels, beta, temperature)
    fused = op
    if fused is None:  # liger-kernel: on the GPU machine (a wheel carried there); its absence is the note
        from liger_kernel.transformers.functional import liger_fused_linear_jsd  # noqa: PLC0415

        fused = liger_fused_linear_jsd
    with torch.enable_grad():
        hs_leaf = hs.detach().requires_grad_(True)
        Ws_leaf = Ws.detach().requires_grad_(True)
        loss = fused(hs_leaf, Ws_leaf, ht, Wt, labels, jsd_beta=beta, ignore_index=IGNORE_INDEX, temperature=temperature)
        dhs, dWs = torch.autograd.grad(loss, (hs_leaf, Ws_leaf))
    return loss.detach(), dhs, dWs
