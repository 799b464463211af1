"""The harness's determinism check (task.toml `checks.deterministic`): the first workload's first call is made
again on the same inputs and every output must match bit for bit. splitk_gemm declares it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.catalog.task import Checks
from workbench.harness.checker.correctness import differing_bits

REPO = Path(__file__).resolve().parent.parent
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("splitk_gemm")
NAIVE = REPO / "tests" / "solutions" / "splitk_gemm_naive.py"

# The naive solution whose result moves by a rounding on some calls: what a reduction in float atomics does on a
# GPU, where the order of the adds is the scheduler's. The interpreter runs programs in order, so the variation is
# written out: every third call scales c by (1 + 3/1024) in a kernel of its own: 0.375-0.75 of a unit in the
# last place of a bfloat16, so about half of the values move by one unit, which keeps the result within the
# tolerance (4.0e-3 against the bound 5e-3 on the first smoke shape; 1.6e-3 unperturbed).
VARIES = """

_CALLS = [0]


@triton.jit
def _nudge_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(c_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs, (x * (1.0 + 3.0 / 1024.0)).to(tl.bfloat16), mask=offs < n)


def run(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    c = honest_run(a, w)
    _CALLS[0] += 1
    if _CALLS[0] % 3 == 0:
        _nudge_kernel[(triton.cdiv(c.numel(), 256),)](c, c.numel(), BLOCK=256)
    return c
"""


def test_splitk_gemm_requires_identical_results() -> None:
    assert TASK.spec.checks.deterministic
    assert Checks().deterministic is False  # the default: most tasks allow a varying summation order


def test_differing_bits_counts_elements_that_differ_in_any_bit() -> None:
    x = torch.tensor([1.0, -0.0, 2.5, float("nan")], dtype=torch.bfloat16)
    assert differing_bits(x, x.clone()) == 0
    y = x.clone()
    y[1] = 0.0  # -0.0 and 0.0 compare equal as numbers, not as bits
    assert differing_bits(y, x) == 1
    assert differing_bits(x.float(), x.float()) == 0
    assert differing_bits(x[:2], x) == 4  # another shape: every value counts
    assert differing_bits(torch.tensor([1, 2], dtype=torch.int64), torch.tensor([1, 3], dtype=torch.int64)) == 1


@pytest.mark.slow  # one CPU evaluation (3-6 s)
def test_a_result_that_varies_between_identical_calls_fails_the_check(tmp_path: Path) -> None:
    path = tmp_path / "varies.py"
    path.write_text(NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(") + VARIES)
    report = evaluate(TASK, path, "cpu", ["smoke_m16_k200_n96"])
    assert report.status == "incorrect_numerical", report.message
    assert "output c is not deterministic" in report.message
    assert "differ bit for bit between two calls on the same inputs" in report.message
