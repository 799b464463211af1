"""fused_linear_ce: the oracle against autograd in float64, the inputs' realism, the expert's and the naive
solution's results in process, and the configurations. The harness's runs are in tests/test_task_suite.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("fused_linear_ce")
reference = import_file(TASK.file("reference.py"), "_test_fused_linear_ce_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_fused_linear_ce_inputs")
expert = import_file(TASK.file("expert.py"), "_test_fused_linear_ce_expert")
naive = import_file(REPO / "tests" / "solutions" / "fused_linear_ce_naive.py", "_test_fused_linear_ce_naive")
NAMES = ("loss", "dh", "dW")


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_exact_matches_float64_autograd_with_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """exact() against autograd of F.cross_entropy in float64, with chunks of 3 rows (EXACT_CHUNK_ELEMENTS cut)."""
    d = inputs.make_inputs({"BT": 10, "D": 16, "V": 40}, seed=3, device="cpu")
    h = d["h"].double().requires_grad_(True)
    W = d["W"].double().requires_grad_(True)
    loss = F.cross_entropy(h @ W.mT, d["targets"], ignore_index=-100)
    loss.backward()
    monkeypatch.setattr(reference, "EXACT_CHUNK_ELEMENTS", 3 * 40)
    e_loss, e_dh, e_dW = reference.exact(**d)
    assert h.grad is not None and W.grad is not None
    assert abs(float(e_loss) - float(loss.detach())) < 1e-12 and rel(e_dh, h.grad) < 1e-12 and rel(e_dW, W.grad) < 1e-12
    assert float(e_dh[d["targets"] == -100].abs().max()) == 0.0  # ignored rows: zero gradient


def test_reference_is_autograd_of_bf16_logits_and_close_to_exact() -> None:
    d = inputs.make_inputs({"BT": 40, "D": 48, "V": 200}, seed=1, device="cpu")
    loss, dh, dW = reference.reference(**d)
    assert loss.dtype == torch.float32 and loss.shape == () and dh.dtype == dW.dtype == torch.bfloat16
    assert dh.shape == (40, 48) and dW.shape == (200, 48) and dh.is_contiguous() and dW.is_contiguous()
    e = reference.exact(**d)
    assert rel(loss, e[0]) < 2e-3 and 1e-3 < rel(dh, e[1]) < 1e-2 and 1e-3 < rel(dW, e[2]) < 1e-2
    with pytest.raises(ValueError):
        reference.reference(d["h"].float(), d["W"], d["targets"])


def test_inputs_are_deterministic_realistic_and_every_output_moves() -> None:
    wl = {"BT": 256, "D": 64, "V": 1000}
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[k], b[k]) for k in a)
    t = a["targets"]
    ignored = t == -100
    assert 0.05 <= float(ignored.float().mean()) <= 0.6  # prompts masked, most tokens kept
    kept = t[~ignored]
    assert int(kept.min()) >= 0 and int(kept.max()) < 1000 and len(set(kept.tolist())) < len(kept)  # Zipf repeats
    z = a["h"].float() @ a["W"].float().mT
    assert 0.8 < float(z.std()) < 4.0  # logits of a trained head's scale
    loss, dh, dW = reference.exact(**a)
    assert 1.0 < float(loss) < 6.0  # nats: a model part way through training
    assert float(dh[~ignored].norm(dim=1).min()) > 0 and float(dh[ignored].abs().max()) == 0.0
    assert float(dW.norm(dim=1).min()) > 0  # every vocabulary row has a gradient (softmax mass)
    c = inputs.make_inputs(wl, seed=8, device="cpu")
    assert not torch.equal(a["targets"] == -100, c["targets"] == -100)  # the ignored set changes per call


@pytest.mark.parametrize(
    "axes",
    [
        {"BT": 40, "D": 48, "V": 200},
        {"BT": 33, "D": 80, "V": 97},
    ],
)
@pytest.mark.slow  # kernels under the interpreter, in process (3-6 s on a 2-core CPU)
def test_expert_and_naive_match_exact(axes: dict[str, int], interpreter_fixed: None) -> None:
    made = inputs.make_inputs(axes, seed=sum(axes.values()), device="cpu")
    want = reference.exact(**made)
    ref = reference.reference(**made)
    for solution in (expert, naive):
        outs = solution.run(**made)
        assert outs[0].shape == () and outs[0].dtype == torch.float32
        assert outs[1].dtype == outs[2].dtype == torch.bfloat16 and outs[1].is_contiguous() and outs[2].is_contiguous()
        for name, out, w, r in zip(NAMES, outs, want, ref, strict=True):
            result = compare(out, w, TASK.spec.tolerance.rule_for(name), r)
            assert result.ok and result.rel_err < 0.4 * (result.bound or 1.0), (solution.__name__, name, result)
        assert float(outs[1][made["targets"] == -100].abs().max()) == 0.0


def test_chunks_and_configs() -> None:
    cuda = torch.device("cuda")
    cfg = expert.config_for(cuda)
    for workload in TASK.spec.workloads:
        BT, D, V = (workload.axes[k] for k in ("BT", "D", "V"))
        chunk = expert.chunk_rows_for(cfg, BT, V)
        assert chunk % cfg.block_m == 0 and chunk * V <= expert.CHUNK_ELEMENTS and 2 * chunk >= BT
        assert TASK.min_flops(workload) == 6 * BT * D * V
        assert TASK.min_flops(workload) / 989e12 > TASK.bytes_moved(workload) / 4.8e12  # compute-bound
    assert [expert.chunk_rows_for(cfg, w.axes["BT"], w.axes["V"]) for w in TASK.spec.workloads] == [8192, 8192, 4096]
    cpu = expert.config_for(torch.device("cpu"))
    assert cpu == expert.INTERPRETER and expert.chunk_rows_for(cpu, 40, 200) == 16  # three chunks on the smoke shape
