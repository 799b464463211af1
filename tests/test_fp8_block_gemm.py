"""The fp8_block_gemm task: the oracle against a per-block formula, inputs, the expert and the naive solution."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("fp8_block_gemm")
reference = import_file(TASK.file("reference.py"), "_test_fp8_block_gemm_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_fp8_block_gemm_inputs")
expert = import_file(TASK.file("expert.py"), "_test_fp8_block_gemm_expert")
NAIVE = REPO / "tests" / "solutions" / "fp8_block_gemm_naive.py"
naive = import_file(NAIVE, "_test_fp8_block_gemm_naive")
CPU = torch.device("cpu")


def per_block_float64(d: dict[str, torch.Tensor]) -> torch.Tensor:
    """C as a sum over K blocks of (A_j B_j^T) times the outer product of the block's scales (float64)."""
    A, As, B, Bs = d["A"].double(), d["As"].double(), d["B"].double(), d["Bs"].double()
    N, K = B.shape
    C = torch.zeros((A.shape[0], N), dtype=torch.float64)
    for j in range(K // 128):
        part = A[:, 128 * j : 128 * j + 128] @ B[:, 128 * j : 128 * j + 128].T
        C += part * As[:, j : j + 1] * Bs[torch.arange(N) // 128, j].unsqueeze(0)
    return C


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


@pytest.mark.parametrize(("M", "N", "K"), [(8, 128, 128), (33, 384, 640)])
def test_exact_matches_the_per_block_formula(M: int, N: int, K: int) -> None:
    d = inputs.make_inputs({"M": M, "N": N, "K": K}, seed=M, device="cpu")
    assert rel(reference.exact(**d), per_block_float64(d)) < 1e-12


def test_reference_is_bf16_dequantise_then_gemm_and_close_to_exact() -> None:
    d = inputs.make_inputs({"M": 64, "N": 256, "K": 384}, seed=3, device="cpu")
    C = reference.reference(**d)
    assert C.dtype == torch.bfloat16 and C.shape == (64, 256) and C.is_contiguous()
    assert 1e-3 < rel(C, reference.exact(**d)) < 5e-3  # bf16 operands and output
    with pytest.raises(ValueError):
        reference.reference(d["A"], d["As"][:, :2].contiguous(), d["B"], d["Bs"])


def test_inputs_are_deterministic_realistic_and_every_input_moves_c() -> None:
    wl = {"M": 48, "N": 384, "K": 512}
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(
        torch.equal(a[k].view(torch.uint8) if k in "AB" else a[k], b[k].view(torch.uint8) if k in "AB" else b[k]) for k in a
    )
    assert (a["A"].dtype, a["B"].dtype, a["As"].dtype, a["Bs"].dtype) == (torch.float8_e4m3fn,) * 2 + (torch.float32,) * 2
    assert (a["As"].shape, a["Bs"].shape) == ((48, 4), (3, 4))
    # every group and block fills the FP8 range: its largest magnitude is 448
    assert torch.all(a["A"].float().abs().view(48, 4, 128).amax(-1) == 448)
    assert torch.all(a["B"].float().abs().view(3, 128, 4, 128).amax(dim=(1, 3)) == 448)
    # scales vary along K (per row), along N (per K block) and from row to row
    assert float((a["As"].amax(1) / a["As"].amin(1)).min()) > 1.2
    assert float((a["Bs"].amax(0) / a["Bs"].amin(0)).min()) > 1.05
    assert float(a["As"].amax(1).max() / a["As"].amax(1).min()) > 2
    other = inputs.make_inputs(wl, seed=8, device="cpu")
    assert not torch.equal(a["As"], other["As"])
    base = reference.exact(**a)
    for name in a:  # every input moves C
        changed = dict(a)
        if name in ("As", "Bs"):
            changed[name] = a[name] * 1.5
        else:  # negate the FP8 data (exact)
            changed[name] = (-a[name].float()).to(torch.float8_e4m3fn)
        assert rel(reference.exact(**changed), base) > 0.1, name


@pytest.mark.parametrize(("M", "N", "K"), [(64, 256, 256), (72, 384, 384), pytest.param(136, 640, 256, marks=pytest.mark.slow)])
def test_expert_and_naive_match_exact_in_process(M: int, N: int, K: int) -> None:
    d = inputs.make_inputs({"M": M, "N": N, "K": K}, seed=1, device="cpu")
    scaled = {k: v * 1000 if k in ("As", "Bs") else v for k, v in d.items()}  # as the harness scales
    tol = TASK.spec.tolerance.rule_for("C")
    assert tol.matrix_rel_fro is not None
    for call in (d, scaled):
        oracle = reference.exact(**call)
        for solution in (expert, naive):
            C = solution.run(**call)
            assert C.dtype == torch.bfloat16 and C.shape == (M, N) and C.is_contiguous()
            result = compare(C, oracle, tol)
            assert result.ok and result.rel_err < 0.5 * tol.matrix_rel_fro, (solution.__name__, result.message)


def test_configs_cover_the_registered_shapes_and_the_interpreter_paths() -> None:
    for w in TASK.spec.workloads:
        shape = (w.axes["M"], w.axes["N"], w.axes["K"])
        cfg = expert.GPU_CONFIGS[shape]
        assert 128 % cfg.block_n == 0 and cfg.num_warps in (4, 8)
    # the decode shape needs more programs than the 56 of 128 x 128 tiles
    assert expert.num_programs(128, 7168, expert.GPU_CONFIGS[(128, 7168, 2048)], 132) == 224
    assert expert.num_programs(4096, 24576, expert.GPU_CONFIGS[(4096, 24576, 1536)], 132) == 132
    # under the interpreter: both tile widths and several tiles per persistent program
    smoke = [expert.config_for(w.axes["M"], w.axes["N"], w.axes["K"], CPU) for w in TASK.spec.smoke_workloads]
    assert {c.block_n for c in smoke} == {64, 128} and all(c.persistent for c in smoke)
    assert expert.num_programs(72, 384, smoke[1], expert.INTERPRET_SMS) == 2  # 18 tiles on 2 programs
