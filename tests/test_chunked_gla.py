"""chunked_gla: the reference's semantics (against the step-by-step recurrence), the inputs' decays and scales,
the compared view, the expert's and the naive solution's results in process, and the configurations. The
harness's runs are in tests/test_task_suite.py."""

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
TASK = CATALOG.task("chunked_gla")
BOUND = TASK.spec.tolerance.matrix_rel_fro or 0.0
reference = import_file(TASK.file("reference.py"), "_test_chunked_gla_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_chunked_gla_inputs")
expert = import_file(TASK.file("expert.py"), "_test_chunked_gla_expert")
naive = import_file(REPO / "tests" / "solutions" / "chunked_gla_naive.py", "_test_chunked_gla_naive")


def recurrence(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The definition, step by step in float64: S_t = exp(g_t) S_{t-1} + k_t^T v_t, o_t = D^-0.5 q_t S_t."""
    B, H, T, D = q.shape
    qd, kd, vd, gd = q.double(), k.double(), v.double(), g.double()
    state = torch.zeros((B, H, D, D), dtype=torch.float64)
    o = torch.empty((B, H, T, D), dtype=torch.float64)
    for t in range(T):
        state = state * gd[:, :, t, None, None].exp() + kd[:, :, t, :, None] * vd[:, :, t, None, :]
        o[:, :, t] = D**-0.5 * (qd[:, :, t, None, :] @ state)[:, :, 0]
    return o, state


def worst(outputs: tuple[torch.Tensor, torch.Tensor], want: tuple[torch.Tensor, torch.Tensor], made: dict) -> float:
    """The largest relative Frobenius error over the compared matrices (o's 16-step blocks, the states)."""
    got = reference.steps({"o": outputs[0], "final_state": outputs[1]}, made)
    exact = reference.steps({"o": want[0], "final_state": want[1]}, made)
    return max(compare(got[n], exact[n], TASK.spec.tolerance).rel_err for n in ("o", "final_state"))


def test_one_channel_by_hand() -> None:
    """D 1 (scale 1), T 3: o_t = sum_{j <= t} exp(g_{j+1} + ... + g_t) q_t k_j v_j; the final state likewise."""
    qv, kv, vv, gv = [1.0, 2.0, -1.0], [0.5, 1.0, 2.0], [2.0, -1.0, 0.25], [-0.5, -1.0, -0.25]
    made = {
        "q": torch.tensor(qv, dtype=torch.bfloat16).reshape(1, 1, 3, 1),
        "k": torch.tensor(kv, dtype=torch.bfloat16).reshape(1, 1, 3, 1),
        "v": torch.tensor(vv, dtype=torch.bfloat16).reshape(1, 1, 3, 1),
        "g": torch.tensor(gv, dtype=torch.float32).reshape(1, 1, 3),
    }
    states, s = [], 0.0
    for t in range(3):
        s = math.exp(gv[t]) * s + kv[t] * vv[t]
        states.append(s)
    want = [qv[t] * states[t] for t in range(3)]
    o, state = reference.exact(**made)
    assert o.dtype == state.dtype == torch.float64
    assert o.flatten().tolist() == pytest.approx(want, rel=1e-12) and float(state) == pytest.approx(states[-1], rel=1e-12)
    eager_o, eager_state = reference.reference(**made)
    assert eager_o.dtype == torch.bfloat16 and eager_state.dtype == torch.float32
    assert eager_o.double().flatten().tolist() == pytest.approx(want, rel=1e-2)


@pytest.mark.parametrize("T", [1, 17, 64, 130])
def test_the_chunked_algebra_is_the_recurrence_for_any_chunk(T: int) -> None:
    made = inputs.make_inputs({"B": 2, "H": 3, "T": T, "D": 8}, seed=T, device="cpu")
    want_o, want_state = recurrence(**made)
    for chunk in (1, 5, 16, 64):
        o, state = reference.chunked(*(made[n] for n in ("q", "k", "v", "g")), torch.float64, chunk=chunk)
        assert torch.allclose(o, want_o, rtol=1e-10, atol=1e-12) and torch.allclose(state, want_state, rtol=1e-10, atol=1e-12)
    got = reference.reference(**made)
    assert got[0].shape == (2, 3, T, 8) and got[1].shape == (2, 3, 8, 8)
    assert worst(got, (want_o, want_state), made) < 0.3 * BOUND


def test_inputs_spread_the_decays_and_unit_norm_the_keys() -> None:
    wl = {"B": 3, "H": 8, "T": 256, "D": 32}
    a, b = inputs.make_inputs(wl, seed=3, device="cpu"), inputs.make_inputs(wl, seed=3, device="cpu")
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert a["g"].dtype == torch.float32 and a["q"].dtype == torch.bfloat16 and bool((a["g"] < 0).all())
    for name in ("q", "k"):
        norms = a[name].double().norm(dim=-1)
        assert float(norms.min()) > 0.78 and float(norms.max()) < 1.27
    decay = a["g"].double().exp().mean(dim=-1)  # [B, H]: each head's mean per-step decay
    for row in decay:
        assert float(row.min()) < 0.93 and float(row.max()) > 0.9995  # short- and long-memory heads in every row
    order = decay.argsort(dim=-1)
    assert not all(torch.equal(order[0], other) for other in order[1:])  # the heads' memories move between rows
    base = inputs.base_decays(16)
    assert float(base[0]) == pytest.approx(0.9) and float(base[-1]) == pytest.approx(0.9999)


def test_every_input_moves_the_outputs_far_beyond_the_bound() -> None:
    made = inputs.make_inputs({"B": 1, "H": 4, "T": 96, "D": 16}, seed=11, device="cpu")
    want = reference.exact(**made)
    gen = torch.Generator().manual_seed(1)
    for name in ("q", "k", "v", "g"):
        x = made[name].double()
        moved = x + 0.1 * float(x.abs().mean()) * torch.randn(x.shape, generator=gen, dtype=torch.float64)
        changed = {**made, name: moved.clamp(max=0.0).float() if name == "g" else moved.to(torch.bfloat16)}
        assert worst(reference.exact(**changed), want, made) > 5 * BOUND, name


def test_the_view_blocks_steps_pads_ragged_heads_and_catches_one_wrong_step() -> None:
    made = inputs.make_inputs({"B": 1, "H": 2, "T": 40, "D": 16}, seed=2, device="cpu")
    o, state = reference.exact(**made)
    view = reference.steps({"o": o, "final_state": state}, made)
    assert view["o"].shape == (2 * 3, reference.STEP_BLOCK, 16) and torch.equal(view["final_state"], state)
    assert float(view["o"][2, 8:].abs().max()) == 0.0  # the last block of a 40-step head: 8 steps and 8 zero rows
    assert torch.equal(view["o"][0], o[0, 0, :16]) and torch.equal(view["o"][5, :8], o[0, 1, 32:])
    wrong = o.clone()
    wrong[0, 1, 37] *= 0.5  # one step of one head off by half its value: its block fails by far
    assert worst((wrong, state), (o, state), made) > 5 * BOUND


@pytest.mark.parametrize(
    "axes",
    [
        {"B": 1, "H": 2, "T": 1, "D": 16},
        {"B": 2, "H": 4, "T": 40, "D": 32},
        {"B": 1, "H": 3, "T": 33, "D": 64},
    ],
)
@pytest.mark.slow  # kernels under the interpreter, in process (1-4 s on a 2-core CPU)
def test_expert_and_naive_match_exact(axes: dict[str, int], interpreter_fixed: None) -> None:
    made = inputs.make_inputs(axes, seed=sum(axes.values()), device="cpu")
    scaled = {n: t * 1000.0 for n, t in made.items()}  # decays down to e^-100 per step: no overflow allowed
    for call in (made, scaled):
        want = reference.exact(**call)
        for solution in (expert, naive):
            o, state = solution.run(**call)
            assert o.dtype == torch.bfloat16 and o.shape == want[0].shape and o.is_contiguous()
            assert state.dtype == torch.float32 and state.shape == want[1].shape and state.is_contiguous()
            assert worst((o, state), want, call) < 0.5 * BOUND, solution.__name__


@pytest.mark.slow  # kernels under the interpreter, in process
@pytest.mark.parametrize("segment", [16, 48, 0])
def test_expert_sequence_segments_carry_the_state(segment: int, interpreter_fixed: None) -> None:
    """Segments of one chunk, of three (the last ragged) and the whole sequence in one program: each segment's
    entering state comes from every earlier segment's contribution, with and without fast decays."""
    made = inputs.make_inputs({"B": 1, "H": 2, "T": 100, "D": 16}, seed=5, device="cpu")
    scaled = dict(made, g=made["g"] * 30.0)  # decays that wipe a segment's past: the carry must not blow up
    for call in (made, scaled):
        want = reference.exact(**call)
        got = expert.chunk_gla(*(call[n] for n in ("q", "k", "v", "g")), expert.Config(16, 16, 4, 1, segment))
        assert worst(got, want, call) < 0.5 * BOUND


def test_expert_refuses_a_segment_that_splits_a_chunk() -> None:
    made = inputs.make_inputs({"B": 1, "H": 1, "T": 64, "D": 16}, seed=1, device="cpu")
    with pytest.raises(ValueError, match="multiple of the chunk"):
        expert.chunk_gla(*(made[n] for n in ("q", "k", "v", "g")), expert.Config(16, 16, 4, 1, 24))


def test_registered_shapes_have_configs() -> None:
    for workload in TASK.spec.workloads:
        B, H, T, D = (workload.axes[a] for a in ("B", "H", "T", "D"))
        assert (B * H, T, D) in expert.H200_CONFIGS
        cfg = expert.config_for(B * H, T, D, interpret=False)
        assert D % cfg.block_v == 0 and cfg.block_v >= 16 and cfg.block_t >= 32
        segments = -(-T // cfg.segment) if cfg.segment else 1
        assert B * H * (D // cfg.block_v) * segments >= 128  # programs for the 132 SMs
        assert cfg.segment % cfg.block_t == 0 and cfg.segment < T
    assert expert.config_for(8, 40, 32, interpret=True).block_t == 16


def test_the_rule_off_the_table_reproduces_the_measured_configs() -> None:
    """Shapes off the table get the sweeps' finding as a rule: value blocks of 64, segments up to 256 programs."""
    for (BH, T, D), measured in expert.H200_CONFIGS.items():
        ruled = expert.config_rule(BH, T, D)
        assert ruled.block_v == measured.block_v and bool(ruled.segment) == bool(measured.segment)
        assert measured.segment <= ruled.segment <= 2 * measured.segment  # T = 32768: 4096, the sweep's second
    off = expert.config_for(32, 1000, 128, interpret=False)  # 64 programs without segments
    assert off == expert.Config(64, 64, 4, 2, 256)
    assert expert.config_for(256, 8192, 128, interpret=False).segment == 0  # 512 programs from the heads alone
    for BH, T, D in [(1, 100, 64), (3, 65536, 32), (64, 4096, 256)]:
        cfg = expert.config_rule(BH, T, D)
        assert cfg.segment % cfg.block_t == 0 and cfg.segment < T and D % cfg.block_v == 0
