"""The fused_linear_jsd task: formulas checked by autograd of TRL's form, beta's edges, inputs, the chunk plan,
the expert and the naive solution."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("fused_linear_jsd")
reference = import_file(TASK.file("reference.py"), "_test_fljsd_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_fljsd_inputs")
expert = import_file(TASK.file("expert.py"), "_test_fljsd_expert")
naive = import_file(REPO / "tests" / "solutions" / "fused_linear_jsd_naive.py", "_test_fljsd_naive")
OUTPUTS = ("loss", "dhs", "dWs")
Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def trl_autograd(d: dict[str, object]) -> Outputs:
    """loss, dhs, dWs by float64 autograd of TRL's generalized_jsd_loss (stack + logsumexp mixture, kl_div with
    log targets, batchmean over the labels' mask): the form distillation code uses."""
    hs = d["hs"].double().requires_grad_(True)  # type: ignore[attr-defined]
    ws = d["Ws"].double().requires_grad_(True)  # type: ignore[attr-defined]
    beta, t = float(d["beta"]), float(d["temperature"])  # type: ignore[arg-type]
    student = torch.log_softmax(hs @ ws.T / t, dim=-1)
    teacher = torch.log_softmax(d["ht"].double() @ d["Wt"].double().T / t, dim=-1)  # type: ignore[attr-defined]
    kl = torch.nn.functional.kl_div
    if beta == 0:
        jsd = kl(student, teacher, reduction="none", log_target=True)
    elif beta == 1:
        jsd = kl(teacher, student, reduction="none", log_target=True)
    else:
        b = torch.tensor(beta, dtype=torch.float64)
        mixture = torch.logsumexp(torch.stack([student + torch.log(1 - b), teacher + torch.log(b)]), dim=0)
        jsd = b * kl(mixture, teacher, reduction="none", log_target=True) + (1 - b) * kl(
            mixture, student, reduction="none", log_target=True
        )
    mask = d["labels"] != reference.IGNORE_INDEX
    loss = jsd[mask].sum() / mask.sum()
    loss.backward()
    assert hs.grad is not None and ws.grad is not None
    return loss.detach(), hs.grad, ws.grad


@pytest.mark.parametrize("beta", [0.0, 0.3, 0.5, 1.0])
def test_exact_matches_autograd_of_trl_generalized_jsd(beta: float) -> None:
    d = inputs.make_inputs({"BT": 24, "D": 32, "V": 96}, seed=5, device="cpu")
    d["beta"] = beta
    want = trl_autograd(d)
    got = reference.exact(**d)
    for a, b in zip(got, want, strict=True):
        assert rel(a, b) < 1e-10


def test_the_kl_ends_are_the_limits_of_the_scaled_jsd() -> None:
    """JSD_b / b -> KL(p || q) as b -> 0 and JSD_b / (1 - b) -> KL(q || p) as b -> 1: the ends are the KL
    divergences the generalised JSD scales to (the mixture formula itself vanishes there)."""
    d = inputs.make_inputs({"BT": 16, "D": 32, "V": 64}, seed=2, device="cpu")
    forward = float(reference.exact(**{**d, "beta": 0.0})[0])
    reverse = float(reference.exact(**{**d, "beta": 1.0})[0])
    small = 1e-6
    assert float(reference.exact(**{**d, "beta": small})[0]) / small == pytest.approx(forward, rel=1e-4)
    assert float(reference.exact(**{**d, "beta": 1 - small})[0]) / small == pytest.approx(reverse, rel=1e-4)
    assert forward > 0.3 and reverse > 0.3


@pytest.mark.parametrize(("beta", "temperature"), [(-0.1, 1.0), (1.5, 1.0), (0.5, 0.0), (0.5, -1.0), (0.5, math.inf)])
def test_bad_scalars_raise_value_error(beta: float, temperature: float) -> None:
    d = inputs.make_inputs({"BT": 8, "D": 16, "V": 32}, seed=0, device="cpu")
    d |= {"beta": beta, "temperature": temperature}
    for function in (reference.reference, reference.exact, expert.run, naive.run):
        with pytest.raises(ValueError):
            function(**d)


def test_reference_keeps_bfloat16_logits_and_float32_math() -> None:
    d = inputs.make_inputs({"BT": 32, "D": 64, "V": 500}, seed=3, device="cpu")
    loss, dhs, dWs = reference.reference(**d)
    assert loss.dtype == torch.float32 and loss.shape == ()
    assert dhs.dtype == torch.bfloat16 and dhs.shape == (32, 64) and dhs.is_contiguous()
    assert dWs.dtype == torch.bfloat16 and dWs.shape == (500, 64) and dWs.is_contiguous()
    e = reference.exact(**d)
    assert rel(loss, e[0]) < 5e-3
    # the bfloat16 logits cost 1-2% on the gradients: the reference is outside the task's 1e-2 bound by design
    assert 4e-3 < rel(dhs, e[1]) < 5e-2 and 4e-3 < rel(dWs, e[2]) < 5e-2


def test_inputs_are_deterministic_realistic_and_every_input_moves_the_outputs() -> None:
    wl = {"BT": 64, "D": 64, "V": 300}
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)
    assert a["beta"] in (0.0, 0.5, 1.0) or 0.1 <= a["beta"] <= 0.9
    assert 0.7 <= a["temperature"] <= 2.0
    ignored = a["labels"] == inputs.IGNORE_INDEX
    assert 4 <= int(ignored.sum()) <= 64 // 8  # one prompt token per sequence at least, 1/8 of them at most
    base = reference.exact(**a)
    changes = {
        "hs": a["hs"].float().mul(1.1).bfloat16(),
        "Ws": a["Ws"].float().mul(1.1).bfloat16(),
        "ht": a["ht"].float().mul(1.1).bfloat16(),
        "Wt": a["Wt"].float().mul(1.1).bfloat16(),
        "labels": torch.where(ignored, 0, a["labels"]),
        "beta": 0.25 if a["beta"] != 0.25 else 0.75,
        "temperature": a["temperature"] * 1.2,
    }
    for name, value in changes.items():
        moved = reference.exact(**{**a, name: value})
        for index, out in enumerate(OUTPUTS):
            assert rel(moved[index], base[index]) > 1e-3, (name, out)


def test_the_loss_is_neither_tiny_nor_huge_at_a_registered_like_vocabulary() -> None:
    """The JSD's scale on a 4096-token vocabulary, 128 tokens per call: 0.02-0.69 (bounded by log 2) for
    0 < beta < 1, 0.3-6 for the KL ends."""
    for seed in range(6):
        d = inputs.make_inputs({"BT": 128, "D": 128, "V": 4096}, seed=seed, device="cpu")
        loss = float(reference.exact(**d)[0])
        if 0 < d["beta"] < 1:
            assert 0.02 < loss < math.log(2), (seed, d["beta"], loss)
        else:
            assert 0.3 < loss < 6, (seed, d["beta"], loss)


def test_chunk_plan_on_the_registered_and_smoke_shapes() -> None:
    plan = expert.GPU_PLAN
    assert expert.chunk_rows(8192, 128256, plan) == 4096  # two chunks, 4.2 GB of float32 logits
    assert expert.chunk_rows(4096, 151936, plan) == 2048
    assert expert.chunk_rows(16384, 32000, plan) == 16384  # one chunk: no float32 dWs accumulator
    small = expert.INTERPRET_PLAN
    for w in TASK.spec.smoke_workloads:
        bt, v = w.axes["BT"], w.axes["V"]
        c = expert.chunk_rows(bt, v, small)
        assert c % small.gemm.block_m == 0 or c == bt
    assert [expert.chunk_rows(w.axes["BT"], w.axes["V"], small) for w in TASK.spec.smoke_workloads] == [16, 16, 24]


@pytest.mark.slow  # both kernel sets under the interpreter, in process (5-7 s each on a 2-core CPU)
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_expert_and_naive_match_exact_in_process(beta: float, interpreter_fixed: None) -> None:
    d = inputs.make_inputs({"BT": 40, "D": 48, "V": 130}, seed=11, device="cpu")
    d["beta"] = beta
    oracle = reference.exact(**d)
    tol = TASK.spec.tolerance
    for solution in (expert, naive):
        outs = solution.run(**d)
        assert [o.dtype for o in outs] == [torch.float32, torch.bfloat16, torch.bfloat16]
        assert outs[0].shape == ()
        for name, out, want in zip(OUTPUTS, outs, oracle, strict=True):
            rule = tol.rule_for(name)
            result = compare(out, want, rule)
            assert result.ok and result.rel_err < 0.5 * (rule.matrix_rel_fro or 0), (solution.__name__, name, result)
        dhs = outs[1].double()
        assert float(dhs[d["labels"] == reference.IGNORE_INDEX].abs().max()) == 0.0  # ignored rows exactly zero
