"""mamba2_ssd: the reference's semantics (by hand, and the chunked forms against the step-by-step scan), the
inputs' scales, the expert's and the naive solution's results in process, and the configurations. The
harness's runs are in tests/test_task_suite.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("mamba2_ssd")
reference = import_file(TASK.file("reference.py"), "_test_mamba2_ssd_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_mamba2_ssd_inputs")
expert = import_file(TASK.file("expert.py"), "_test_mamba2_ssd_expert")
naive = import_file(REPO / "tests" / "solutions" / "mamba2_ssd_naive.py", "_test_mamba2_ssd_naive")


def test_two_steps_by_hand() -> None:
    """B 1, T 2, H 2 (G 1), P 1, N 1: S_1 = dt_1 x_1 b_1, S_2 = exp(dt_2 A) S_1 + dt_2 x_2 b_2, y = S c + D x."""
    x = torch.tensor([[[[1.0], [2.0]], [[3.0], [-1.0]]]], dtype=torch.bfloat16)
    dt = torch.tensor([[[0.5, 0.25], [1.0, 0.5]]])
    A = torch.tensor([-1.0, -2.0])
    Bm = torch.tensor([[[[2.0]], [[1.0]]]], dtype=torch.bfloat16)
    Cm = torch.tensor([[[[1.0]], [[4.0]]]], dtype=torch.bfloat16)
    D = torch.tensor([0.5, 1.0])
    y, state = reference.scan(x, dt, A, Bm, Cm, D)
    s1 = [0.5 * 1 * 2, 0.25 * 2 * 2]
    s2 = [math.exp(-1.0) * s1[0] + 1.0 * 3 * 1, math.exp(-1.0) * s1[1] + 0.5 * -1 * 1]
    want_y = [[s1[0] * 1 + 0.5 * 1, s1[1] * 1 + 1.0 * 2], [s2[0] * 4 + 0.5 * 3, s2[1] * 4 + 1.0 * -1]]
    assert torch.allclose(y[0, :, :, 0], torch.tensor(want_y, dtype=torch.float64), rtol=1e-12, atol=0)
    assert torch.allclose(state[0, :, 0, 0], torch.tensor(s2, dtype=torch.float64), rtol=1e-12, atol=0)


@pytest.mark.parametrize("chunk", [4, 8, 64])
def test_chunked_float64_equals_the_scan(chunk: int) -> None:
    """exact()'s chunked form, at chunk lengths that do and do not divide T, is the recurrence to ~1e-12; the
    fp32 reference (chunks of 256) is within bfloat16's rounding."""
    made = inputs.make_inputs({"B": 2, "T": 27, "H": 4, "P": 4, "G": 2, "N": 8}, seed=5, device="cpu")
    want_y, want_state = reference.scan(**made)
    y, state = reference._chunked(**made, chunk=chunk, dtype=torch.float64)
    assert float((y - want_y).abs().max()) < 1e-12 * float(want_y.abs().max())
    assert float((state - want_state).abs().max()) < 1e-12 * float(want_state.abs().max())
    ref_y, ref_state = reference.reference(**made)
    assert ref_y.dtype == torch.bfloat16 and ref_state.dtype == torch.float32
    assert float((ref_y.double() - want_y).norm() / want_y.norm()) < 4e-3
    assert float((ref_state.double() - want_state).norm() / want_state.norm()) < 1e-5


def test_inputs_are_realistic_and_every_part_matters() -> None:
    wl = {"B": 2, "T": 128, "H": 8, "P": 16, "G": 1, "N": 32}
    a, b = inputs.make_inputs(wl, seed=3, device="cpu"), inputs.make_inputs(wl, seed=3, device="cpu")
    assert all(torch.equal(a[k], b[k]) for k in a)
    dt, A = a["dt"], a["A"]
    assert float(dt.min()) >= 1e-3 / 2 and float(dt.max()) <= 0.1 * 2 and bool((A < -1 + 1e-6).all() & (A >= -16).all())
    per_step = (dt * A).mean(dim=(0, 1))  # every shape has heads of long and of short memory
    assert float(per_step.max()) > -0.05 and float(per_step.min()) < -0.2
    y, state = reference.scan(**a)
    skip = a["D"][:, None].double() * a["x"].double()
    share = float((y - skip).norm() / y.norm())
    assert 0.2 < share < 0.9  # the state's part and the skip are both sizeable
    assert float(state.abs().min(dim=-1).values.max()) > 0


@pytest.mark.parametrize(
    "axes",
    [{"B": 1, "T": 50, "H": 4, "P": 32, "G": 4, "N": 24}],  # P over two column blocks, N padded, one head a group
)
@pytest.mark.slow  # kernels under the interpreter, in process (about 1-2 s a call on a 2-core CPU)
def test_expert_and_naive_match_exact(axes: dict[str, int], interpreter_fixed: None) -> None:
    made = inputs.make_inputs(axes, seed=sum(axes.values()), device="cpu")
    want_y, want_state = reference.exact(**made)
    for solution in (expert, naive):
        y, state = solution.run(**made)
        assert y.dtype == torch.bfloat16 and y.shape == want_y.shape and y.is_contiguous()
        assert state.dtype == torch.float32 and state.shape == want_state.shape and state.is_contiguous()
        tokens = (y.double() - want_y).flatten(2).norm(dim=-1) / want_y.flatten(2).norm(dim=-1)
        heads = (state.double() - want_state).flatten(2).norm(dim=-1) / want_state.flatten(2).norm(dim=-1)
        bound = TASK.spec.tolerance.matrix_rel_fro or 0.0
        assert float(tokens.max()) < 0.6 * bound and float(heads.max()) < 0.6 * bound, solution.__name__


@pytest.mark.slow  # kernels under the interpreter, in process
@pytest.mark.parametrize("segment", [16, 32, 0])
def test_expert_sequence_segments_carry_the_state(segment: int, interpreter_fixed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of one chunk, of two (the last ragged) and the whole sequence in one program: each segment's
    entering state comes from every earlier segment's contribution."""
    cfg = expert.Config(chunk=16, block_p=16, num_warps=4, num_stages=1, segment=segment)
    monkeypatch.setattr(expert, "config_for", lambda *_: cfg)
    made = inputs.make_inputs({"B": 1, "T": 100, "H": 2, "P": 16, "G": 1, "N": 16}, seed=3, device="cpu")
    want_y, want_state = reference.exact(**made)
    y, state = expert.run(**made)
    tokens = (y.double() - want_y).flatten(2).norm(dim=-1) / want_y.flatten(2).norm(dim=-1)
    heads = (state.double() - want_state).flatten(2).norm(dim=-1) / want_state.flatten(2).norm(dim=-1)
    bound = TASK.spec.tolerance.matrix_rel_fro or 0.0
    assert float(tokens.max()) < 0.6 * bound and float(heads.max()) < 0.6 * bound


def test_expert_refuses_a_segment_that_splits_a_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = expert.Config(chunk=16, block_p=16, num_warps=4, num_stages=1, segment=40)
    monkeypatch.setattr(expert, "config_for", lambda *_: cfg)
    made = inputs.make_inputs({"B": 1, "T": 100, "H": 2, "P": 16, "G": 1, "N": 16}, seed=3, device="cpu")
    with pytest.raises(ValueError, match="multiple of the chunk"):
        expert.run(**made)


def test_the_rule_off_the_table_reproduces_the_measured_configs() -> None:
    """Shapes off the table get the sweeps' finding as a rule: the whole head dimension per program, segments
    where the heads give fewer than 256 programs, the whole sequence where they give enough."""
    for (batch, T, H, P, _G, _N), measured in expert.H200_CONFIGS.items():
        ruled = expert.config_rule(batch, T, H, P)
        assert (ruled.block_p, ruled.segment) == (measured.block_p, measured.segment)
    for batch, T, H, P in [(1, 100_000, 8, 64), (2, 3000, 24, 48), (1, 512, 4, 128)]:
        cfg = expert.config_rule(batch, T, H, P)
        assert cfg.segment % cfg.chunk == 0 and cfg.segment < T and cfg.block_p in (16, 32, 64)
        segments = -(-T // cfg.segment) if cfg.segment else 1
        assert batch * H * -(-P // cfg.block_p) * segments >= 256 or cfg.segment in (0, 1024)


def test_registered_shapes_have_configs_and_floors() -> None:
    cuda = torch.device("cuda")
    for workload in TASK.spec.workloads:
        axes = workload.axes
        key = tuple(axes[k] for k in ("B", "T", "H", "P", "G", "N"))
        cfg = expert.config_for(*key, cuda)
        assert key in expert.H200_CONFIGS and cfg == expert.H200_CONFIGS[key]
        assert axes["T"] % cfg.chunk == 0 and axes["P"] % cfg.block_p == 0
        assert cfg.segment % cfg.chunk == 0 and cfg.segment < axes["T"]
        segments = axes["T"] // cfg.segment if cfg.segment else 1
        programs = axes["B"] * axes["H"] * axes["P"] // cfg.block_p * segments
        assert programs >= 128  # one program per SM at least: the serial chains run in parallel
        assert TASK.reference_bytes(workload) > 10 * TASK.bytes_moved(workload)
