"""Input generation for the ``fused_adamw`` task.

The lists imitate one AdamW step in the middle of a bf16 mixed-precision training run. Their element shapes
are a fixed function of the workload's axes (``element_shapes``: the same for every seed); the values come
from ``seed``.

Shapes, by ``LAYOUT`` (``NT`` tensors of width ``HID``; ``P`` must equal their total, which the harness checks):

* 1, a GPT-2-style model: the token and position embeddings ``[32768, HID]`` and ``[2048, HID]``, then
  ``(NT - 5) / 12`` blocks of twelve tensors (LayerNorm weights and biases, the fused qkv projection
  ``[3 HID, HID]``, the attention output ``[HID, HID]``, the MLP's ``[4 HID, HID]`` and ``[HID, 4 HID]``, each
  with its bias), the final LayerNorm's weight and bias and an untied output head ``[32768, HID]``;
* 2, a Llama-style model: the embedding ``[32000, HID]``, ``(NT - 3) / 9`` layers of q, k, v, o ``[HID, HID]``,
  gate and up ``[I, HID]``, down ``[HID, I]`` (``I = 43 HID / 16``: Llama-2-7B's 11008 at 4096) and two RMSNorm
  weights ``[HID]``, the final norm and the output head ``[32000, HID]``;
* 3, adapters: ``NT`` LoRA-like matrices in pairs ``[r, HID]`` and ``[HID, r]``, the rank ``r`` 8-16 (a fixed
  cycle), so every tensor holds 8-16 ``HID`` elements;
* 4, mixed sizes: ``NT`` tensors of ``R`` rows of ``HID``, ``R`` spread log-uniformly over 1-4096 by a fixed
  golden-ratio sequence; a tensor of one row is 1-D, alternately a norm weight ``[HID]`` (the first tensor) and
  a gain or per-head vector of 1-64 elements (real parameter lists hold scalars and per-head vectors: a kernel
  that skips small tensors fails on the registered list too, not only on the smoke lists).

The states' dtype, by ``SB`` (their bytes per element): float32 at 4, bfloat16 at 2 (the memory-saving
optimisers' choice: both moments stored in bfloat16, the math still in float32).

Values, per tensor (everything float32 from a ``torch.Generator`` on ``device``, the grads rounded to bfloat16
once, the states too where ``SB = 2``; the hyper-parameters and each tensor's gradient scale from a CPU
generator, both seeded with ``seed``):

* params: matrices and embeddings normal with standard deviation 0.02, biases the same, norm weights
  ``1 + 0.1 N(0, 1)``;
* the gradient's scale: ``sigma`` log-uniform on [1e-6, 1e-3] per tensor (the per-element RMS of clipped
  gradients of LLM training; a global norm of 1 over 1e8-1e10 parameters is 1e-5 to 1e-4 RMS), times a per-row
  factor log-uniform on [1/3, 3] for matrices. Each element has a persistent drift ``0.3 z`` (in units of its
  scale) and fresh noise: ``grad = s (drift + z')``. A fifth of an embedding's rows get no gradient (tokens
  absent from the batch): zeros;
* the states are what ``k = step - 1`` earlier steps of that process leave: ``exp_avg = s ((1 - beta1^k) drift
  + a z'')`` with ``a^2 = (1 - beta1) / (1 + beta1) (1 - beta1^(2k))`` (the noise an EMA keeps), ``exp_avg_sq =
  s^2 (1 - beta2^k) (drift^2 + 1) exp(0.25 z''')`` (positive, the EMA of the squares, with its fluctuation);
* the hyper-parameters of a sweep around the usual settings: ``beta1`` uniform on [0.85, 0.95], ``beta2 = 1 -
  10^u`` with ``u`` uniform on [-3, log10(0.05)] (0.95-0.999), ``lr`` log-uniform on [1e-4, 3e-4], ``eps``
  log-uniform on [1e-9, 1e-7], ``weight_decay`` uniform on [0.05, 0.1], each rounded to a float32 value (a
  kernel's scalar arguments are float32: ``1 - beta`` is then exact however it is computed). ``step`` is
  log-uniform over the steps where ``0.01 <= beta2^step <= 0.99`` (and >= 2, which keeps ``exp_avg_sq``
  positive): the bias corrections move the update by 0.5% or more, and ``1 - beta2^step >= 0.01`` keeps their
  float32 rounding small (earlier steps lose more of it to cancellation, later ones run the same arithmetic
  with corrections that round to 1).

The values are drawn a batch at a time (``batches``): the tensors of one kind and row width together (their
rows stacked; the 1-D tensors of a kind as one column), in list order, up to ``BATCH_ELEMENTS`` elements a
batch, the batches in order of their kind and width's first appearance; in each batch, every kind of value
above is one draw for all its rows (params, the per-row factors, the drift, the gradient's noise, an
embedding's silent rows, the two states' noises, in that order), and one multi-tensor copy per list moves each
tensor's rows into an allocation of its own. So making a list costs a few dozen operations per batch, not per
tensor (the 10,000 adapters are 19 batches, the mixed list's 1,000 tensors 34). The distribution is that of
drawing tensor by tensor; the values a seed gives are those of this order (they changed when the draws were
batched).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import torch

GPT_VOCAB = 32768
GPT_CONTEXT = 2048
LLAMA_VOCAB = 32000
ADAPTER_RANKS = (8, 13, 9, 14, 10, 15, 11, 16, 12)  # the rank of pair j is ADAPTER_RANKS[j % 9]
MIXED_MAX_ROWS = 4096
SMALL_MAX = 64  # the largest of the mixed layout's small 1-D tensors
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
EMBEDDING_SILENT_ROWS = 0.2  # the share of an embedding's rows whose token is absent from the batch
BATCH_ELEMENTS = 1 << 24  # the most elements drawn at once (a larger tensor is drawn alone): bounded scratch

Layout = list[tuple[str, tuple[int, ...]]]  # (kind, shape) per tensor; kinds: matrix, embedding, norm, bias


def _gpt(n_tensors: int, hid: int) -> Layout:
    layers, rest = divmod(n_tensors - 5, 12)
    if rest or layers < 1:
        raise ValueError(f"a GPT-2-style layout has 12 L + 5 tensors, got NT={n_tensors}")
    block: Layout = [
        ("norm", (hid,)), ("bias", (hid,)),  # ln_1
        ("matrix", (3 * hid, hid)), ("bias", (3 * hid,)),  # attn.c_attn (q, k, v fused)
        ("matrix", (hid, hid)), ("bias", (hid,)),  # attn.c_proj
        ("norm", (hid,)), ("bias", (hid,)),  # ln_2
        ("matrix", (4 * hid, hid)), ("bias", (4 * hid,)),  # mlp.c_fc
        ("matrix", (hid, 4 * hid)), ("bias", (hid,)),  # mlp.c_proj
    ]  # fmt: skip
    head: Layout = [("embedding", (GPT_VOCAB, hid)), ("matrix", (GPT_CONTEXT, hid))]  # wte, wpe
    tail: Layout = [("norm", (hid,)), ("bias", (hid,)), ("matrix", (GPT_VOCAB, hid))]  # ln_f, lm_head
    return head + block * layers + tail


def _llama(n_tensors: int, hid: int) -> Layout:
    layers, rest = divmod(n_tensors - 3, 9)
    if rest or layers < 1 or (43 * hid) % 16:
        raise ValueError(f"a Llama-style layout has 9 L + 3 tensors and HID a multiple of 16, got NT={n_tensors}, HID={hid}")
    inter = 43 * hid // 16
    layer: Layout = [("matrix", (hid, hid))] * 4  # q_proj, k_proj, v_proj, o_proj
    layer += [("matrix", (inter, hid)), ("matrix", (inter, hid)), ("matrix", (hid, inter))]  # gate, up, down
    layer += [("norm", (hid,)), ("norm", (hid,))]  # input_layernorm, post_attention_layernorm
    return [("embedding", (LLAMA_VOCAB, hid)), *(layer * layers), ("norm", (hid,)), ("matrix", (LLAMA_VOCAB, hid))]


def _adapters(n_tensors: int, hid: int) -> Layout:
    ranks = [ADAPTER_RANKS[(i // 2) % len(ADAPTER_RANKS)] for i in range(n_tensors)]
    return [("matrix", (r, hid) if i % 2 == 0 else (hid, r)) for i, r in enumerate(ranks)]


def _mixed(n_tensors: int, hid: int) -> Layout:
    rows = [round(MIXED_MAX_ROWS ** ((i * GOLDEN) % 1.0)) for i in range(n_tensors)]
    # a one-row tensor is 1-D: a norm's weight [HID] (every other one), else a gain or per-head vector of
    # 1-64 elements (a logit scale, a Mamba layer's A_log or D): real lists hold tensors that small
    ones = itertools.count()
    return [
        ("matrix", (r, hid)) if r > 1 else ("norm", (hid,)) if next(ones) % 2 == 0 else ("bias", (1 + i % SMALL_MAX,))
        for i, r in enumerate(rows)
    ]


LAYOUTS = {1: _gpt, 2: _llama, 3: _adapters, 4: _mixed}
STATE_DTYPES = {4: torch.float32, 2: torch.bfloat16}  # by SB, the states' bytes per element


def layout(workload: Mapping[str, int]) -> Layout:
    """(kind, shape) of every tensor of the lists, in order: a function of the axes NT, HID and LAYOUT only."""
    if workload["LAYOUT"] not in LAYOUTS:
        raise ValueError(f"LAYOUT must be one of {sorted(LAYOUTS)}, got {workload['LAYOUT']}")
    return LAYOUTS[workload["LAYOUT"]](workload["NT"], workload["HID"])


def element_shapes(workload: Mapping[str, int]) -> list[tuple[int, ...]]:
    """The shape of each element of every list (params, grads, exp_avg and exp_avg_sq alike), allocating nothing."""
    return [shape for _, shape in layout(workload)]


def _float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (returned as a Python float, which holds it exactly)."""
    return float(torch.tensor(value, dtype=torch.float32))


def hyperparameters(gen: torch.Generator) -> dict[str, float | int]:
    """step, lr, beta1, beta2, eps and weight_decay drawn from the CPU generator ``gen`` (see the docstring).

    The floats are rounded to float32 values, as a kernel receives its scalar arguments: then ``1 - beta1`` and
    ``1 - beta2`` computed in float32 are exact (Sterbenz), and a kernel that derives them itself is as accurate
    as one handed them in float64. (With 0.999 itself, float32's 0.999 is 3e-8 off, 3e-5 of ``1 - beta2``.)"""
    u = torch.rand((6,), generator=gen, dtype=torch.float64).tolist()
    beta1 = _float32(0.85 + 0.1 * u[0])
    beta2 = _float32(1.0 - 10.0 ** (-3.0 + u[1] * (3.0 + math.log10(0.05))))
    first = max(2.0, math.log(0.99) / math.log(beta2))  # beta2^step <= 0.99 from here ...
    last = math.log(0.01) / math.log(beta2)  # ... and >= 0.01 up to here
    step = round(math.exp(math.log(first) + u[2] * (math.log(last) - math.log(first))))
    step = max(math.ceil(first), min(math.floor(last), step))
    lr = _float32(math.exp(math.log(1e-4) + u[3] * math.log(3.0)))
    eps = _float32(10.0 ** (-9.0 + 2.0 * u[4]))
    weight_decay = _float32(0.05 + 0.05 * u[5])
    return {"step": step, "lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps, "weight_decay": weight_decay}


def state_dtype(workload: Mapping[str, int]) -> torch.dtype:
    """The dtype of exp_avg and exp_avg_sq at the workload (its axis SB)."""
    if workload["SB"] not in STATE_DTYPES:
        raise ValueError(f"SB must be one of {sorted(STATE_DTYPES)} (the states' bytes per element), got {workload['SB']}")
    return STATE_DTYPES[workload["SB"]]


def batches(tensors: Layout) -> list[list[int]]:
    """The list positions drawn together, batch by batch in drawing order: the tensors of one kind and row width
    (the matrices of one number of columns; the 1-D tensors of a kind, whatever their lengths) in list order,
    the groups in order of first appearance, at most ``BATCH_ELEMENTS`` elements a batch (a larger tensor
    alone). A function of the layout only."""
    groups: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    for i, (kind, shape) in enumerate(tensors):
        groups.setdefault((kind, shape[1:]), []).append(i)
    out: list[list[int]] = []
    for positions in groups.values():
        size = BATCH_ELEMENTS  # the elements of the batch being filled (a full one: start a new batch)
        for i in positions:
            numel = math.prod(tensors[i][1])
            if size + numel > BATCH_ELEMENTS:
                out.append([])
                size = 0
            out[-1].append(i)
            size += numel
    return out


def _batch(
    kind: str,
    shapes: list[tuple[int, ...]],
    sigmas: list[float],
    k: int,
    betas: tuple[float, float],
    states: torch.dtype,
    gen: torch.Generator,
    dev: torch.device,
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """(params, grads, exp_avg, exp_avg_sq) of tensors of one kind and row width (a 1-D tensor is a column of
    one-element rows), each list its tensors in order: one draw of each kind of value for the whole batch, its
    rows stacked, then each tensor's rows copied into an allocation of its own."""
    rows = [shape[0] for shape in shapes]
    total, width, matrix = sum(rows), math.prod(shapes[0][1:]), len(shapes[0]) == 2

    def normal() -> torch.Tensor:
        return torch.randn((total, width), generator=gen, device=dev, dtype=torch.float32)

    beta1, beta2 = betas
    param = 1.0 + 0.1 * normal() if kind == "norm" else 0.02 * normal()
    per_tensor = torch.tensor(sigmas, device=dev, dtype=torch.float32)
    counts = torch.tensor(rows, device=dev)
    scale = torch.repeat_interleave(per_tensor, counts, output_size=total).view(total, 1)  # sigma on each row
    if matrix:  # a factor per row (output feature or token)
        scale = scale * torch.exp((2.0 * torch.rand((total, 1), generator=gen, device=dev) - 1.0) * math.log(3.0))
    drift = 0.3 * normal()
    grad = scale * (drift + normal())
    if kind == "embedding":  # rows of tokens absent from the batch: no gradient this step
        silent = torch.rand((total, 1), generator=gen, device=dev) < EMBEDDING_SILENT_ROWS
        grad = grad.masked_fill(silent, 0.0)
    keep = math.sqrt((1.0 - beta1) / (1.0 + beta1) * (1.0 - beta1 ** (2 * k)))
    exp_avg = scale * ((1.0 - beta1**k) * drift + keep * normal())
    exp_avg_sq = scale.square() * (1.0 - beta2**k) * (drift.square() + 1.0) * torch.exp(0.25 * normal())
    drawn = (param, grad.to(torch.bfloat16), exp_avg.to(states), exp_avg_sq.to(states))
    params, grads, exp_avgs, exp_avg_sqs = (_apart(t.split(rows), shapes) for t in drawn)
    return params, grads, exp_avgs, exp_avg_sqs


def _apart(parts: tuple[torch.Tensor, ...], shapes: list[tuple[int, ...]]) -> list[torch.Tensor]:
    """Each part copied into a new contiguous allocation of its shape (one multi-tensor copy for them all); a
    batch of one tensor is its own allocation already."""
    if len(parts) == 1:
        return [parts[0].view(shapes[0])]
    elements = [torch.empty(shape, dtype=parts[0].dtype, device=parts[0].device) for shape in shapes]
    torch._foreach_copy_(elements, [part.view(shape) for part, shape in zip(parts, shapes, strict=True)])
    return elements


def make_inputs(workload: Mapping[str, int], seed: int, device: str | torch.device) -> dict[str, object]:
    """The four lists (each element a new contiguous allocation) and the six hyper-parameters, deterministic in
    ``seed`` on one device: a few dozen operations per batch of tensors (``batches``), not per tensor."""
    dev = torch.device(device)
    host = torch.Generator().manual_seed(seed)
    gen = torch.Generator(device=dev).manual_seed(seed)
    hyper = hyperparameters(host)
    tensors = layout(workload)
    states = state_dtype(workload)
    sigmas = torch.exp(math.log(1e-6) + torch.rand((len(tensors),), generator=host, dtype=torch.float64) * math.log(1e3))
    sigma = sigmas.tolist()
    lists: dict[str, list[torch.Tensor]] = {"params": [], "grads": [], "exp_avg": [], "exp_avg_sq": []}
    for made in lists.values():
        made.extend([torch.empty(0)] * len(tensors))  # filled batch by batch below
    k = int(hyper["step"]) - 1  # the steps already taken
    betas = (float(hyper["beta1"]), float(hyper["beta2"]))
    for positions in batches(tensors):
        kind = tensors[positions[0]][0]
        shapes = [tensors[i][1] for i in positions]
        drawn = _batch(kind, shapes, [sigma[i] for i in positions], k, betas, states, gen, dev)
        for name, elements in zip(lists, drawn, strict=True):
            for i, element in zip(positions, elements, strict=True):
                lists[name][i] = element
    return {**lists, **hyper}
