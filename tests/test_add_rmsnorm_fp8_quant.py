"""The add_rmsnorm_fp8_quant task: the oracle, the views, inputs, the tolerance, the expert and the naive solution."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import triton

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution import interpreter_fix

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("add_rmsnorm_fp8_quant")
reference = import_file(TASK.file("reference.py"), "_test_add_rmsnorm_fp8_quant_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_add_rmsnorm_fp8_quant_inputs")
expert = import_file(TASK.file("expert.py"), "_test_add_rmsnorm_fp8_quant_expert")
NAIVE = REPO / "tests" / "solutions" / "add_rmsnorm_fp8_quant_naive.py"
naive = import_file(NAIVE, "_test_add_rmsnorm_fp8_quant_naive")
GPU_RULES = TASK.spec.tolerance  # one set of rules: the harness gives the interpreter the GPU's FP8 cast


@pytest.fixture
def gpu_fp8_cast() -> Iterator[None]:
    """The interpreter's FP8 cast fixed as the harness's solution process fixes it (interpreter_fix)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        yield
        return
    uninstall = interpreter_fix.install()
    try:
        yield
    finally:
        uninstall()


def make(M: int, N: int, seed: int) -> dict[str, Any]:
    made: dict[str, Any] = inputs.make_inputs({"M": M, "N": N}, seed=seed, device="cpu")
    return made


def oracle(d: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The exact oracle's compared values: the views of exact()'s outputs and the updated residual."""
    res = d["residual"].clone()
    y, scales = reference.exact(d["x"], res, d["weight"], d["eps"])
    values: dict[str, torch.Tensor] = reference.dequantized({"y": y, "scales": scales}, d)
    values["residual"] = res
    return values


def solution_values(fn: Any, d: dict[str, Any]) -> dict[str, torch.Tensor]:
    res = d["residual"].clone()
    y, scales = fn(d["x"], res, d["weight"], d["eps"])
    values: dict[str, torch.Tensor] = reference.dequantized({"y": y, "scales": scales}, d)
    values["residual"] = res
    return values


def check(values: dict[str, torch.Tensor], want: dict[str, torch.Tensor], rules: Any) -> dict[str, float]:
    """err / bound per compared value (inf where a rule fails without a per-matrix error above it)."""
    ratios = {}
    for name, value in values.items():
        rule = rules.rule_for(name)
        result = compare(value, want[name], rule)
        r = result.rel_err / result.bound if result.bound else 0.0
        ratios[name] = r if result.ok or r > 1 else float("inf")
    return ratios


def emulate(d: dict[str, Any], pow2: bool, **cheat: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused algorithm in float32 torch (torch's round-to-nearest FP8 cast), or a wrong variant of it."""
    x, r, w = d["x"].float(), d["residual"].float(), d["weight"].float()
    M, N = x.shape
    s = x + r
    divisor = triton.next_power_of_2(N) if cheat.get("padded_mean") else N
    h = (x if cheat.get("quantise_x") else s) * torch.rsqrt(s.square().sum(1, keepdim=True) / divisor + 1e-6) * w
    g = h.view(M, N // 128, 128)
    scale = g.abs().amax(-1, keepdim=True).clamp_min(1e-10) / 448
    if pow2:
        scale = torch.exp2(torch.ceil(torch.log2(scale)))
    y = (g / scale).clamp(-448, 448).to(torch.float8_e4m3fn).view(M, N)
    scales = scale.view(M, N // 128)
    if cheat.get("shift_scales"):  # each group dequantised with its right neighbour's scale
        scales = torch.roll(scales, -1, dims=1)
    return y, scales.contiguous()


# ------------------------------------------------------------------------------------------------
# The oracle, the reference and the views
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("M", "N"), [(8, 256), (5, 384)])
def test_exact_is_rms_norm_of_the_sum_and_updates_the_residual(M: int, N: int) -> None:
    d = make(M, N, seed=M)
    res = d["residual"].clone()
    y, scales = reference.exact(d["x"], res, d["weight"], d["eps"])
    s = d["x"].double() + d["residual"].double()
    want = torch.nn.functional.rms_norm(s, (N,), d["weight"].double(), eps=1e-6)
    assert y.dtype == torch.float64 and float((y - want).abs().max() / want.abs().max()) < 1e-12
    assert torch.equal(scales, torch.ones(M, N // 128, dtype=torch.float64))
    assert torch.equal(res, (d["x"].float() + d["residual"].float()).to(torch.bfloat16))
    assert torch.equal(reference.dequantized({"y": y, "scales": scales}, d)["y"], y)  # the oracle's view is h


def test_reference_is_eager_group_quantisation_close_to_exact() -> None:
    d = make(64, 512, seed=3)
    res = d["residual"].clone()
    y, scales = reference.reference(d["x"], res, d["weight"], d["eps"])
    assert y.dtype == torch.float8_e4m3fn and y.shape == (64, 512) and y.is_contiguous()
    assert scales.dtype == torch.float32 and scales.shape == (64, 4) and scales.is_contiguous()
    # scale = amax / 448: every group's largest |y| is exactly 448
    assert torch.equal(y.float().abs().view(64, 4, 128).amax(-1), torch.full((64, 4), 448.0))
    want = oracle(d)
    assert torch.equal(res, want["residual"])
    ratios = check(solution_values(reference.reference, d), want, GPU_RULES)
    assert max(ratios.values()) < 0.7, ratios
    err = compare(reference.dequantized({"y": y, "scales": scales}, d)["y"], want["y"], GPU_RULES).rel_err
    assert 0.005 < err < 0.035  # FP8 rounding, not exactness


def test_dequantized_rejects_invalid_scales_and_nan() -> None:
    d = make(4, 256, seed=1)
    y, scales = reference.reference(d["x"], d["residual"].clone(), d["weight"], d["eps"])
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        broken = scales.clone()
        broken[2, 1] = bad
        with pytest.raises(ValueError, match="scales"):
            reference.dequantized({"y": y, "scales": broken}, d)
    nan = y.clone()
    nan.view(torch.uint8)[1, 7] = 0x7F  # float8_e4m3fn's NaN
    with pytest.raises(ValueError, match="NaN"):
        reference.dequantized({"y": nan, "scales": scales}, d)
    with pytest.raises(ValueError, match="scales must be"):
        reference.dequantized({"y": y, "scales": scales[:, :1]}, d)
    views = reference.dequantized({"y": y, "scales": scales}, d)
    assert views["y_groups"].shape == (4 * 2, 1, 128)  # one "matrix" per group for compare()
    assert torch.equal(views["y_groups"].reshape(4, 256), views["y"])


def test_eps_is_pinned() -> None:
    d = make(2, 128, seed=0)
    for fn in (reference.reference, reference.exact, expert.run, naive.run):
        with pytest.raises(ValueError, match="eps"):
            fn(d["x"], d["residual"].clone(), d["weight"], 1e-5)


# ------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------
def test_inputs_are_deterministic_realistic_and_every_input_moves() -> None:
    a, b = make(48, 1024, seed=7), make(48, 1024, seed=7)
    assert all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)
    assert (a["x"].dtype, a["residual"].dtype, a["weight"].dtype, a["eps"]) == (torch.bfloat16,) * 3 + (1e-6,)
    rms = a["residual"].float().square().mean(1).sqrt()
    assert float(rms.max() / rms.min()) > 2  # per-token scale variation
    assert float(a["x"].float().norm() / a["residual"].float().norm()) < 0.8  # a sublayer output is smaller
    assert float(a["weight"].float().min()) > 0 and float(a["weight"].float().max() / a["weight"].float().min()) > 5
    # massive-activation channels at random positions: the largest channel differs between seeds
    spread = [make(48, 1024, seed=s)["residual"].float().abs().mean(0) for s in range(4)]
    assert len({int(c.argmax()) for c in spread}) > 1
    assert all(float(c.max() / c.median()) > 4 for c in spread)
    # group scales vary within rows (what a scale stored for the wrong group would get wrong)
    _, scales = reference.reference(a["x"], a["residual"].clone(), a["weight"], a["eps"])
    spread_in_row = scales.max(1).values / scales.min(1).values
    assert float(spread_in_row.min()) > 1.3 and float(spread_in_row.median()) > 2
    base = oracle(a)
    for name in ("x", "residual", "weight"):  # every input moves y; x and residual move the residual
        changed = dict(a)
        changed[name] = (a[name].float() * (1 + torch.rand(a[name].shape))).to(torch.bfloat16)
        new = oracle(changed)
        assert compare(new["y"], base["y"], GPU_RULES).rel_err > 0.05, name
        moved = compare(new["residual"].double(), base["residual"].double(), GPU_RULES).rel_err
        assert (moved > 0.01) == (name != "weight"), name


# ------------------------------------------------------------------------------------------------
# The tolerance: honest FP8 designs pass with margin, plausible wrong ones fail (GPU rules)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("M", "N"), [(16, 7168), (32, 1024)])
def test_gpu_rules_accept_both_scale_choices_and_reject_wrong_kernels(M: int, N: int) -> None:
    for seed in range(3):
        d = make(M, N, seed)
        want = oracle(d)
        for pow2 in (False, True):
            values = reference.dequantized(dict(zip(("y", "scales"), emulate(d, pow2), strict=True)), d)
            values["residual"] = want["residual"]
            ratios = check(values, want, GPU_RULES)
            assert max(ratios.values()) < 0.9, (pow2, ratios)
        for cheat in ("shift_scales", "quantise_x", "padded_mean"):
            if cheat == "padded_mean" and N & (N - 1) == 0:
                continue  # exact for a power-of-two row
            values = reference.dequantized(dict(zip(("y", "scales"), emulate(d, True, **{cheat: True}), strict=True)), d)
            assert check({"y": values["y"]}, want, GPU_RULES)["y"] > 1.3, cheat


def test_group_rule_is_a_bound_on_round_to_nearest() -> None:
    # the worst case for one element: just above a power of two plus half an e4m3 step (relative 2^-4)
    worst = torch.tensor([1 + 2.0**-4 + 1e-7])
    err = float((worst.to(torch.float8_e4m3fn).float() - worst).abs() / worst)
    assert err < 2.0**-4 < GPU_RULES.rule_for("y_groups").matrix_rel_fro  # type: ignore[operator]


# ------------------------------------------------------------------------------------------------
# The expert and the naive solution under the interpreter
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("M", "N"), [(8, 256), (6, 384), (2, 7168)])
@pytest.mark.usefixtures("gpu_fp8_cast")
def test_expert_is_the_fused_algorithm_bit_for_bit(M: int, N: int) -> None:
    """What CI checks for the GPU's FP8 cast: with the interpreter's cast fixed as in the harness, every FP8
    value equals torch's round-to-nearest cast of the same float32 value; the scales are exact."""
    d = make(M, N, seed=11)
    res = d["residual"].clone()
    y, scales = expert.run(d["x"], res, d["weight"], d["eps"])
    assert y.dtype == torch.float8_e4m3fn and scales.dtype == torch.float32 and scales.shape == (M, N // 128)
    right = oracle(d)["residual"].double()
    assert bool(((res.double() - right).abs() <= 2.0**-7 * right.abs()).all())  # the interpreter's bf16 cast truncates
    want_y, want_scales = emulate(d, pow2=True)
    assert torch.equal(scales, want_scales)  # powers of two >= amax / 448
    assert bool((torch.log2(scales) == torch.log2(scales).round()).all())
    differ = y.float() != want_y.float()
    assert float(differ.float().mean()) < 1e-3  # the bfloat16 cast of the interpreter (truncation) moves a few


@pytest.mark.parametrize(("M", "N"), [(16, 256), (9, 384), (3, 7168)])
@pytest.mark.usefixtures("gpu_fp8_cast")
def test_expert_and_naive_pass_the_rules_in_process(M: int, N: int) -> None:
    d = make(M, N, seed=5)
    want = oracle(d)
    for solution in (expert, naive):
        ratios = check(solution_values(solution.run, d), want, GPU_RULES)
        assert max(ratios.values()) < 0.9, (solution.__name__, ratios)


def test_config_is_a_whole_row_with_warps_from_its_width() -> None:
    assert expert.config_for(7168) == expert.Config(8192, 16)
    assert expert.config_for(8192) == expert.Config(8192, 16)
    assert expert.config_for(4096) == expert.Config(4096, 8)
    assert expert.config_for(384) == expert.Config(512, 1)
