"""The comparison's verdict and figures do not depend on how it is cut into blocks: the checker compares
outputs of billions of elements in bounded float64 blocks (harness/checker/compare.py) and must reach the
verdict a whole-tensor comparison reaches, on passing and failing outputs, NaN/Inf included (its figures
to the last bits that summing in another order changes)."""

from __future__ import annotations

import math

import pytest
import torch

from workbench.catalog.task import CompareRule
from workbench.harness.checker.compare import compare, compare_many, relative_errors

RULES = {
    "per_matrix": CompareRule(matrix_rel_fro=1e-2),
    "with_reference": CompareRule(matrix_rel_fro=1e-3, reference_error_factor=2.0),
    "mean": CompareRule(matrix_rel_fro=1e-2, reference_error_factor=2.0, aggregate="mean"),
    "elementwise": CompareRule(atol=1e-3, rtol=1e-3),
    "both": CompareRule(atol=1e-2, rtol=1e-2, matrix_rel_fro=5e-3),
}


def outputs(kind: str, shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(hash((kind, shape)) % 2**31)
    oracle = torch.randn(shape, generator=g, dtype=torch.float64)
    reference = (oracle + 2e-3 * torch.randn(shape, generator=g, dtype=torch.float64)).half()
    out = oracle.float() + {"close": 1e-4, "far": 3e-2}.get(kind, 0.0) * torch.randn(shape, generator=g)
    if kind == "nan":
        out.view(-1)[out.numel() // 2] = math.nan
    if kind == "one_bad_block":  # one value off near the end: found in whichever block holds it
        out.view(-1)[max(0, out.numel() - 3)] += 10.0
    return out, oracle, reference


@pytest.mark.parametrize("kind", ["close", "far", "nan", "one_bad_block"])
@pytest.mark.parametrize("shape", [(), (37,), (3, 5, 7), (2, 40, 33)])
@pytest.mark.parametrize("rule", sorted(RULES))
def test_blocks_of_any_size_give_the_whole_tensor_verdict(kind: str, shape: tuple[int, ...], rule: str) -> None:
    out, oracle, reference = outputs(kind, shape)
    whole = compare(out, oracle, RULES[rule], reference, chunk=1 << 30)
    for chunk in (1, 7, 64, 1000):  # a block smaller than a matrix, a few rows, several matrices
        cut = compare(out, oracle, RULES[rule], reference, chunk=chunk)
        assert cut.ok == whole.ok
        assert cut.message == whole.message
        assert (cut.bound is None) == (whole.bound is None)
        for a, b in ((cut.rel_err, whole.rel_err), (cut.max_abs_err, whole.max_abs_err), (cut.bound or 0, whole.bound or 0)):
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12)


def test_the_verdicts_are_the_ones_a_reader_expects() -> None:
    close, far = outputs("close", (4, 16, 16)), outputs("far", (4, 16, 16))
    assert compare(close[0], close[1], RULES["per_matrix"], chunk=10).ok
    failed = compare(far[0], far[1], RULES["per_matrix"], chunk=10)
    assert not failed.ok
    assert "4 of 4 matrices exceed the tolerance" in failed.message
    nan = outputs("nan", (4, 16, 16))
    assert compare(nan[0], nan[1], RULES["per_matrix"], chunk=10).message == "1 output values are NaN or Inf"
    bad = outputs("one_bad_block", (4, 16, 16))
    message = compare(bad[0], bad[1], RULES["elementwise"], chunk=10).message
    assert message.startswith("1 of 1024 values exceed") and "first at [3, 15, 13]" in message


def test_relative_errors_per_matrix_in_blocks() -> None:
    out, oracle, _ = outputs("far", (3, 20, 20))
    want = torch.linalg.matrix_norm(out.double() - oracle) / torch.linalg.matrix_norm(oracle)
    assert torch.allclose(relative_errors(out, oracle, chunk=9), want, rtol=1e-12)


def test_a_lists_small_elements_compared_in_batches_get_each_its_own_verdict() -> None:
    """compare_many (a tensor list's elements, many small ones a batch at a time) gives every element the verdict,
    message and figures compare gives it alone: passing, failing, NaN where the oracle is finite, NaN or Inf on both
    sides, empty and large elements, under every rule and block size."""
    g = torch.Generator().manual_seed(7)
    shapes = [(), (1,), (37,), (3, 5, 7), (2, 40, 33), (16, 5), (0,), (3000,), (7,)]
    outs, oracles = [], []
    for i in range(45):  # every shape with every case and oracle dtype once (45 = lcm of 9, 5 and 3)
        want = torch.randn(shapes[i % len(shapes)], generator=g, dtype=torch.float64)
        got = (want + 1e-4 * torch.randn(want.shape, generator=g, dtype=torch.float64)).float()
        flat_got, flat_want = got.view(-1), want.view(-1)
        if got.numel() and i % 5 == 1:
            flat_got[got.numel() // 2] = math.nan
        if got.numel() and i % 5 == 2:
            flat_got[-1] += 10.0
        if got.numel() and i % 5 == 3:
            flat_got[0] = flat_want[0] = math.inf
        if got.numel() and i % 5 == 4:
            flat_want[-1] = math.nan
        outs.append(got)
        oracles.append(want.float() if i % 3 else want)
    for rule in sorted(RULES):
        for chunk in (1 << 24, 100, 29):
            batched = list(compare_many(outs, oracles, RULES[rule], chunk=chunk))
            assert len(batched) == len(outs)
            for out, oracle, many in zip(outs, oracles, batched, strict=True):
                one = compare(out, oracle, RULES[rule], chunk=chunk)
                assert (many.ok, many.message, many.bound is None) == (one.ok, one.message, one.bound is None)
                for a, b in ((many.rel_err, one.rel_err), (many.max_abs_err, one.max_abs_err), (many.bound or 0, one.bound or 0)):
                    assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12)
