"""gated_deltanet: the reference's semantics (by hand, and the chunked forms against the token-by-token
recurrence), the inputs' properties, the expert's and the naive solution's results in process, and the
configurations. The harness's runs are in tests/test_task_suite.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("gated_deltanet")
reference = import_file(TASK.file("reference.py"), "_test_gated_deltanet_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_gated_deltanet_inputs")
expert = import_file(TASK.file("expert.py"), "_test_gated_deltanet_expert")
naive = import_file(REPO / "tests" / "solutions" / "gated_deltanet_naive.py", "_test_gated_deltanet_naive")


def _rel(out: torch.Tensor, want: torch.Tensor) -> float:
    """The worst per-matrix relative Frobenius error (as the harness measures it)."""
    diff = (out.double() - want).flatten(-2).norm(dim=-1)
    return float((diff / want.flatten(-2).norm(dim=-1)).max())


def test_the_same_key_twice_by_hand() -> None:
    """D 2, T 2, k = q = e0 both times, beta 0.5, alpha 1 then 0.5, v = (2, 0) then (0, 4):
    S1 = 0.5 e0 (2, 0) = [[1, 0], [0, 0]]; S2 = 0.5 (I - 0.5 e0 e0^T) S1 + 0.5 e0 (0, 4) = [[0.25, 2], [0, 0]]."""
    e0 = torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]], dtype=torch.bfloat16)
    v = torch.tensor([[[[2.0, 0.0], [0.0, 4.0]]]], dtype=torch.bfloat16)
    g = torch.tensor([[[0.0, math.log(0.5)]]], dtype=torch.float32)
    beta = torch.tensor([[[0.5, 0.5]]], dtype=torch.bfloat16)
    want_o = torch.tensor([[[[1.0, 0.0], [0.25, 2.0]]]], dtype=torch.float64) / math.sqrt(2.0)
    want_s = torch.tensor([[[[0.25, 2.0], [0.0, 0.0]]]], dtype=torch.float64)
    for form in (reference.exact, reference.recurrent):
        o, s = form(e0, e0, v, g, beta)
        assert torch.allclose(o, want_o, atol=1e-5) and torch.allclose(s, want_s, atol=1e-5), form.__name__
    o, s = reference.reference(e0, e0, v, g, beta)
    assert o.dtype == torch.bfloat16 and s.dtype == torch.float32
    assert torch.allclose(o.double(), want_o, atol=4e-3) and torch.allclose(s.double(), want_s, atol=1e-5)


@pytest.mark.parametrize("T", [5, 64, 150])  # within one chunk, exactly one, and three with a partial last one
def test_chunked_forms_agree_with_the_recurrence(T: int) -> None:
    made = inputs.make_inputs({"B": 1, "H": 3, "T": T, "D": 16}, seed=T, device="cpu")
    o_seq, s_seq = reference.recurrent(**made)
    o_exact, s_exact = reference.exact(**made)
    assert float((o_exact - o_seq).abs().max()) < 1e-12 * float(o_seq.abs().max())
    assert float((s_exact - s_seq).abs().max()) < 1e-12 * float(s_seq.abs().max())
    o_ref, s_ref = reference.reference(**made)
    assert _rel(o_ref, o_seq) < 3e-3 and _rel(s_ref, s_seq) < 1e-5  # float32, o rounded to bfloat16


def test_inputs_are_realistic_and_every_input_matters() -> None:
    wl = {"B": 2, "H": 4, "T": 96, "D": 32}
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert all(a[n].is_contiguous() for n in a)
    beta, g = a["beta"].float(), a["g"]
    assert float(beta.min()) > 0 and float(beta.max()) < 1 and 0.3 < float(beta.mean()) < 0.7
    assert float(g.max()) < 0
    rates = -g.mean(dim=(0, 2))  # per head: slow to fast, log-spaced
    assert float(rates[-1] / rates[0]) > 30
    kn = reference._l2norm(a["k"].double()[0, 0])
    cosines = (kn @ kn.T)[torch.ones(96, 96, dtype=torch.bool).triu(1)]
    assert 0.2 < float(cosines.mean()) < 0.6  # a head's keys share a direction: the WY correction matters
    o, s = reference.exact(**a)
    # the first token's value reaches the last chunk's output and the final state of the slowest head
    changed = dict(a, v=a["v"].clone())
    changed["v"][:, :, 0] = -changed["v"][:, :, 0]
    o2, s2 = reference.exact(**changed)
    assert float((o2 - o)[:, 0, 64:].norm() / o[:, 0, 64:].norm()) > 1e-3
    assert float((s2 - s)[:, 0].norm() / s[:, 0].norm()) > 1e-3
    assert float(o.norm(dim=-1).min()) > 0


def test_registered_shapes_have_configs() -> None:
    cuda = torch.device("cuda")
    for workload in TASK.spec.workloads:
        key = tuple(workload.axes[a] for a in ("B", "H", "T", "D"))
        assert key in expert.H200_CONFIGS
        cfg = expert.config_for(*key, cuda)
        D = key[3]
        assert cfg.chunk == 64 and cfg.block == 16  # the model's chunk; 16 x 16 forward substitution
        assert D % cfg.state_block_v == 0 and D % cfg.out_block_v == 0
        assert key[0] * key[1] * D // cfg.state_block_v >= 128  # the sequential pass fills the SMs
    cfg = expert.config_for(1, 2, 40, 16, torch.device("cpu"))
    assert (cfg.chunk, cfg.block) == (16, 8)


@pytest.mark.slow  # kernels under the interpreter, in process (about 1 s per call on a 2-core CPU)
@pytest.mark.parametrize("axes", [{"B": 1, "H": 2, "T": 35, "D": 32}])
def test_expert_and_naive_match_exact(axes: dict[str, int], interpreter_fixed: None) -> None:
    made = inputs.make_inputs(axes, seed=sum(axes.values()), device="cpu")
    want_o, want_s = reference.exact(**made)
    bound = TASK.spec.tolerance.matrix_rel_fro or 0.0
    for solution in (expert, naive):
        o, s = solution.run(**made)
        assert o.dtype == torch.bfloat16 and o.shape == want_o.shape and o.is_contiguous()
        assert s.dtype == torch.float32 and s.shape == want_s.shape and s.is_contiguous()
        assert _rel(o, want_o) < 0.5 * bound and _rel(s, want_s) < 0.5 * bound, solution.__name__
