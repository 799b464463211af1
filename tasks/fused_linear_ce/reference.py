"""Reference semantics for the ``fused_linear_ce`` task.

The operator is the last step of a language model's training forward and backward: the LM head
``logits = h @ W^T`` followed by the token-mean cross-entropy against the next-token targets, with
tokens whose target is ``ignore_index`` (-100: prompt and padding positions) left out of the loss and of
its mean. With ``n`` the number of tokens whose target is not ignored, ``lse_i = log sum_v exp(z_iv)``::

    loss = (1 / n) sum over kept tokens i of (lse_i - z_i,t_i)
    G    = d loss / d logits = (softmax(z_i) - onehot(t_i)) / n on kept rows, 0 on ignored rows
    dh   = G @ W            # [BT, D]
    dW   = G^T @ h          # [V, D]

``reference`` is what Hugging Face model code runs in a training step (``lm_head`` in bfloat16, the
logits upcast to float32, ``F.cross_entropy(..., ignore_index=-100)``, then autograd). ``exact`` is the
same mathematics in float64, processed in chunks of rows so that its memory stays bounded at the
registered shapes: it is the correctness oracle. ``library`` is the fused call a practitioner has instead
(Liger-Kernel's), timed as a second baseline on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

IGNORE_INDEX: int = -100
EXACT_CHUNK_ELEMENTS: int = 1 << 28  # float64 logits per chunk of exact(): 2 GiB
LIGER_VERSION: str = "0.8.5"  # the liger-kernel release library() calls (scripts/fetch_device_wheels.sh)


def _check(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if h.ndim != 2 or W.ndim != 2 or h.shape[1] != W.shape[1]:
        raise ValueError(f"h must be [BT, D] and W [V, D], got {tuple(h.shape)} and {tuple(W.shape)}")
    if targets.shape != (h.shape[0],):
        raise ValueError(f"targets must be [BT] = [{h.shape[0]}], got {tuple(targets.shape)}")
    if h.dtype != torch.bfloat16 or W.dtype != torch.bfloat16:
        raise ValueError(f"h and W must be bfloat16, got {h.dtype} and {W.dtype}")
    if targets.dtype != torch.int64:
        raise ValueError(f"targets must be int64, got {targets.dtype}")


def reference(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eager PyTorch as model code writes it: bfloat16 logits, upcast, ``F.cross_entropy``, autograd.

    ``h``: bfloat16 ``[BT, D]``; ``W``: bfloat16 ``[V, D]``; ``targets``: int64 ``[BT]`` in ``[0, V)`` or
    -100. Returns ``(loss, dh, dW)``: a float32 scalar (0-d), bfloat16 ``[BT, D]`` and bfloat16 ``[V, D]``,
    as autograd gives them for a bfloat16 model. The [BT, V] float32 logits, their log-softmax and its
    gradient are materialised.
    """
    _check(h, W, targets)
    with torch.enable_grad():
        h_leaf = h.detach().requires_grad_(True)
        W_leaf = W.detach().requires_grad_(True)
        loss = F.cross_entropy((h_leaf @ W_leaf.mT).float(), targets, ignore_index=IGNORE_INDEX)
        dh, dW = torch.autograd.grad(loss, (h_leaf, W_leaf))
    return loss.detach(), dh.contiguous(), dW.contiguous()


def exact(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float64 oracle: the same loss and gradients with float64 logits, softmax and products (outputs float64).

    Rows are processed in chunks of at most ``EXACT_CHUNK_ELEMENTS`` logits; the loss is summed over the
    chunks and ``dW`` accumulated in place, both in float64, and everything is divided by the count of kept
    tokens. Its device memory: float64 copies of ``h`` and ``W``, ``dh`` and ``dW``, and one chunk of logits
    (about 22 GB at qwen_bt4096_d8192, where a [V, D] float64 product per chunk had added 10 GB more).
    """
    _check(h, W, targets)
    BT, D = h.shape
    V = W.shape[0]
    hd, Wd = h.double(), W.double()
    keep = targets != IGNORE_INDEX
    n = keep.sum().double()
    loss = torch.zeros((), dtype=torch.float64, device=h.device)
    dh = torch.empty((BT, D), dtype=torch.float64, device=h.device)
    dW = torch.zeros((V, D), dtype=torch.float64, device=h.device)
    rows = max(1, EXACT_CHUNK_ELEMENTS // V)
    for r0 in range(0, BT, rows):
        r1 = min(BT, r0 + rows)
        z = hd[r0:r1] @ Wd.mT
        lse = torch.logsumexp(z, dim=1)
        t = targets[r0:r1]
        kept = keep[r0:r1]
        safe_t = torch.where(kept, t, torch.zeros_like(t)).unsqueeze(1)
        loss += torch.where(kept, lse - z.gather(1, safe_t).squeeze(1), torch.zeros_like(lse)).sum()
        g = z.sub_(lse.unsqueeze(1)).exp_()  # in place: one [rows, V] float64 buffer per chunk
        g.scatter_add_(1, safe_t, -kept.double().unsqueeze(1))
        g.mul_((kept.double() / n).unsqueeze(1))
        torch.mm(g, Wd, out=dh[r0:r1])
        dW.addmm_(g.mT, hd[r0:r1])  # accumulated in place: no [V, D] float64 product per chunk
    return loss / n, dh, dW


def library(
    h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor, op: Callable[..., torch.Tensor] | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The library call a practitioner has instead (task.toml ``[library]``): Liger-Kernel's fused linear
    cross-entropy, ``liger_kernel.transformers.functional.liger_fused_linear_cross_entropy`` (a thin wrapper of
    ``LigerFusedLinearCrossEntropyFunction``; what Hugging Face's Trainer runs with ``use_liger_kernel=True``),
    liger-kernel 0.8.5, with its defaults (``accum_dtype=None``, ``chunk_mem_const=1``). Returns what
    ``reference`` returns: ``(loss, dh, dW)``, float32 0-d, bfloat16 ``[BT, D]``, bfloat16 ``[V, D]``.

    Its dataflow: the forward computes the loss and both gradients. It reads the count of kept tokens to the
    host once (``.item()``), then walks the tokens in chunks of ``next_pow2(ceil(BT / ceil(V / D)))`` rows
    (256 at llama3_8b_bt8192: 32 chunks); per chunk the bfloat16 logits ``h_c @ W^T`` (cuBLAS, into one reused
    ``[chunk, V]`` buffer), one Triton program per row that writes the row's loss and overwrites its logits
    in place with ``G = (softmax - onehot) / n`` (zero on ignored rows), ``dh_c = G @ W`` (cuBLAS) and
    ``dW += G^T @ h_c`` (cuBLAS addmm into a bfloat16 ``dW``: one read and one write of ``dW`` per chunk). The
    backward only hands the stored gradients back (the upstream gradient is 1). ``h`` and ``W`` enter as
    leaves that require grad, as in ``reference``: without that Liger computes no gradient. ``op`` replaces
    the Liger call (tests: the same contract elsewhere)."""
    _check(h, W, targets)
    fused = op
    if fused is None:  # liger-kernel: on the GPU machine (a wheel carried there); its absence is the note
        from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy  # noqa: PLC0415

        fused = liger_fused_linear_cross_entropy
    with torch.enable_grad():
        h_leaf = h.detach().requires_grad_(True)
        W_leaf = W.detach().requires_grad_(True)
        loss = fused(h_leaf, W_leaf, targets, ignore_index=IGNORE_INDEX)
        dh, dW = torch.autograd.grad(loss, (h_leaf, W_leaf))
    return loss.detach(), dh, dW
