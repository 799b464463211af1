"""The w4a16_gemm task: the packed format, the reference and oracle, inputs, the expert and the naive solution."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
TASK = CATALOG.task("w4a16_gemm")
reference = import_file(TASK.file("reference.py"), "_test_w4a16_gemm_reference")
inputs = import_file(TASK.file("inputs.py"), "_test_w4a16_gemm_inputs")
expert = import_file(TASK.file("expert.py"), "_test_w4a16_gemm_expert")
NAIVE = REPO / "tests" / "solutions" / "w4a16_gemm_naive.py"
naive = import_file(NAIVE, "_test_w4a16_gemm_naive")


@pytest.fixture
def exact_bf16_dot() -> Iterator[None]:
    """The harness's interpreter fix (bfloat16 tl.dot operands widened exactly), as in its solution process."""
    from workbench.harness.solution import interpreter_fix

    uninstall = interpreter_fix.install()
    yield
    uninstall()


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_packing_follows_the_gptq_layout() -> None:
    # codes chosen by hand: word (r, n) holds rows 8r..8r+7 of column n, lowest nibble first
    codes = torch.arange(16 * 3).reshape(16, 3) % 16
    words = inputs.pack_nibbles(codes, 0)
    assert words.shape == (2, 3) and words.dtype == torch.int32
    for r in range(2):
        for n in range(3):
            value = int(words[r, n]) & 0xFFFFFFFF
            assert [(value >> (4 * i)) & 15 for i in range(8)] == codes[8 * r : 8 * r + 8, n].tolist()
    assert int(inputs.pack_nibbles(torch.full((8, 1), 15), 0)) == -1  # 0xFFFFFFFF as int32
    # unpacking (the reference's shift-and-mask) inverts packing along either dimension
    gen = torch.Generator().manual_seed(0)
    q = torch.randint(0, 16, (64, 24), generator=gen)
    assert torch.equal(reference.unpack_nibbles(inputs.pack_nibbles(q, 0), 0).long(), q)
    assert torch.equal(reference.unpack_nibbles(inputs.pack_nibbles(q, 1), 1).long(), q)


def test_exact_dequantises_one_code_where_the_format_says() -> None:
    K, N = 256, 16
    k, n = 200, 11  # group 1, word row 25, nibble 0; zero word column 1, nibble 3
    q = torch.full((K, N), 7)
    q[k, n] = 13
    zeros = torch.full((K // 128, N), 7)
    zeros[1, n] = 4
    scales = torch.full((K // 128, N), 0.5).to(torch.bfloat16)
    scales[1, n] = 0.25
    x = torch.zeros((2, K), dtype=torch.bfloat16)
    x[0, k], x[1, k], x[1, 5] = 2.0, -1.0, 3.0
    args = (x, inputs.pack_nibbles(q, 0), scales, inputs.pack_nibbles(zeros, 1))
    y = reference.exact(*args)
    expected = torch.zeros((2, N), dtype=torch.float64)
    expected[0, n] = 2.0 * (13 - 4) * 0.25
    expected[1, n] = -1.0 * (13 - 4) * 0.25  # x[1, 5] meets code 7 minus zero 7 in column n
    assert torch.equal(y, expected)
    assert torch.equal(reference.reference(*args).double(), expected)


def test_quantised_weight_is_close_to_the_float_weight() -> None:
    gen = torch.Generator().manual_seed(1)
    w = 0.02 * torch.randn((512, 64), generator=gen)
    x = torch.randn((4, 512), generator=gen).to(torch.bfloat16)
    y = reference.exact(x, *inputs.quantize(w))
    assert 0.02 < rel(y, x.double() @ w.double()) < 0.15  # 4-bit round to nearest: about 10%


def test_reference_is_bf16_and_close_to_exact() -> None:
    d = inputs.make_inputs({"M": 16, "N": 256, "K": 512}, seed=3, device="cpu")
    y = reference.reference(**d)
    assert y.dtype == torch.bfloat16 and y.shape == (16, 256) and y.is_contiguous()
    assert 5e-4 < rel(y, reference.exact(**d)) < 4e-3  # bf16 weights and output


def test_inputs_are_deterministic_realistic_and_every_input_moves_the_output() -> None:
    wl = {"M": 4, "N": 128, "K": 1024}
    a, b = inputs.make_inputs(wl, seed=7, device="cpu"), inputs.make_inputs(wl, seed=7, device="cpu")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert (a["x"].dtype, a["qweight"].dtype, a["scales"].dtype, a["qzeros"].dtype) == (
        torch.bfloat16,
        torch.int32,
        torch.bfloat16,
        torch.int32,
    )
    zeros = reference.unpack_nibbles(a["qzeros"], 1)
    assert len(torch.unique(zeros)) >= 8 and float((zeros == 8).float().mean()) < 0.3  # zero points vary
    s = a["scales"].float()
    assert float(s.min()) > 0 and 3e-3 < float(s.mean()) < 3e-2  # Llama-like weights (std ~0.02)
    assert float((s[1:] / s[:-1]).log().abs().mean()) > 0.1  # scales differ between neighbouring groups
    codes = reference.unpack_nibbles(a["qweight"], 0)
    assert int(codes.min()) == 0 and int(codes.max()) == 15
    rms = a["x"].float().square().mean(dim=1).sqrt()
    assert float(rms.max() / rms.min()) > 1.2  # per-token scale variation
    base = reference.exact(**a)
    assert float(base.std()) > 0.1
    gen = torch.Generator().manual_seed(0)
    for name in a:  # every input moves y
        changed = {k: v.clone() for k, v in a.items()}
        if name in ("x", "scales"):
            changed[name] = (changed[name].float() * (1 + torch.rand(changed[name].shape, generator=gen))).to(torch.bfloat16)
        else:  # flip a random nibble bit in every word
            bits = 1 << (4 * torch.randint(0, 8, changed[name].shape, generator=gen))
            changed[name] = changed[name] ^ bits.to(torch.int32)
        assert rel(reference.exact(**changed), base) > 1e-2, name


@pytest.mark.parametrize(("M", "N", "K"), [(1, 96, 640), (3, 64, 256), (20, 80, 512), (64, 48, 384)])
def test_expert_and_naive_match_exact_in_process(M: int, N: int, K: int, exact_bf16_dot: None) -> None:
    d = inputs.make_inputs({"M": M, "N": N, "K": K}, seed=M + N, device="cpu")
    oracle = reference.exact(**d)
    tol = TASK.spec.tolerance
    assert tol.matrix_rel_fro is not None
    for solution in (expert, naive):
        out = solution.run(**d)
        assert out.dtype == torch.bfloat16 and out.shape == (M, N) and out.is_contiguous()
        result = compare(out, oracle, tol)
        assert result.ok and result.rel_err < 0.5 * tol.matrix_rel_fro, (solution.__name__, result.message)


@pytest.mark.parametrize("kernel", ["gemv", "mma"])
def test_both_expert_kernels_handle_any_m_and_uneven_splits(kernel: str, exact_bf16_dot: None) -> None:
    tol = TASK.spec.tolerance
    assert tol.matrix_rel_fro is not None
    # the GEMV kernel runs a program per row (any M is M rows: 18 would only be slower under the interpreter);
    # the MMA kernel's 16-row blocks need an M past one block to show a ragged last block
    last_m = 18 if kernel == "mma" else 3
    for M, N, K, split in [(1, 40, 640, 2), (5, 72, 384, 2), (last_m, 24, 512, 3)]:
        d = inputs.make_inputs({"M": M, "N": N, "K": K}, seed=K, device="cpu")
        cfg = expert.Config(kernel, 16, 32, split, 4, 1)
        out = expert.w4a16_gemm(d["x"], d["qweight"], d["scales"], d["qzeros"], cfg)
        result = compare(out, reference.exact(**d), tol)
        assert result.ok and result.rel_err < 0.5 * tol.matrix_rel_fro, (kernel, M, N, K, result.message)


def test_registered_shapes_have_configs_that_fill_the_h200() -> None:
    sms = 132
    registered = {(w.axes["M"], w.axes["N"], w.axes["K"]) for w in TASK.spec.workloads}
    assert registered == set(expert.H200_CONFIGS)
    for (M, N, K), cfg in expert.H200_CONFIGS.items():
        assert cfg.kernel == ("gemv" if M <= expert.GEMV_MAX_M else "mma")
        assert 2 * cfg.split_k <= K // 128  # at least two groups per split
        rows = M if cfg.kernel == "gemv" else -(-M // cfg.block_m)
        programs = -(-N // cfg.block_n) * cfg.split_k * rows
        assert 1.9 * sms <= programs <= (8 if cfg.kernel == "gemv" else 4) * sms, (M, N, K, programs)
        if cfg.kernel == "gemv":  # 4 int32 words per thread and row: the 16 packed rows stay in one thread
            assert cfg.block_n == 128 * cfg.num_warps
        assert expert.default_config(M, N, K, sms, interpret=False) == cfg  # the table is the rules, written out


def test_smoke_configs_exercise_splits_and_both_kernels() -> None:
    seen = set()
    for w in TASK.spec.smoke_workloads:
        M, N, K = w.axes["M"], w.axes["N"], w.axes["K"]
        cfg = expert.config_for(M, N, K, expert.INTERPRET_SMS)
        per_split = -(-(K // 128) // cfg.split_k)
        seen.add((cfg.kernel, -(-(K // 128) // per_split) > 1))
    assert seen == {("gemv", True), ("gemv", False), ("mma", True)}
