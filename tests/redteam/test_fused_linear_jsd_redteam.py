"""Red-team cases for ``fused_linear_jsd``: plausible wrong kernels, each failing the task's tolerance, two of
them rejected through the real harness (all of them in process).

Each cheat in ``fused_linear_jsd_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its kernels, ``_terms``, ``_lse`` and ``_matmul`` available) and evaluated on the CPU:

* ``bf16_lse``: each row's log-sum-exp rounded to bfloat16 (log q, log p shifted by up to 0.03): gradients
  1-9% off, the loss up to 1.5e-2. Wrong for every beta.
* ``bf16_logits``: both logit matrices stored in bfloat16 (the reference's own precision): gradients 1-2% off,
  the loss 1e-4 to 2e-3. Wrong for every beta.
* ``all_tokens``: ignore_index disregarded (prompt tokens in the mean and in the gradient). Wrong on every call
  (inputs.py ignores at least one token per sequence).
* ``no_softmax_term``: the softmax Jacobian's row term ``- KL(q || m)`` missing from dz. Honest only for
  beta = 0 (forward KL has no row term).
* ``geometric_mixture``: log m taken as ``b log p + (1 - b) log q``. Honest only at the KL ends (beta 0 or 1).
* ``beta_swapped``: beta applied to the student's divergence. Honest only at beta = 0.5 (the symmetric JSD).
* ``vocab_subset``: only the first V // 64 * 64 tokens of the vocabulary. Honest only where 64 divides V (no
  smoke V does).

Each evaluation through the harness draws beta from its secret seeds, so only cheats that are wrong for every
beta (``bf16_lse``, ``all_tokens``) are run there; the others are checked in process on seeds whose beta is
known.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("fused_linear_jsd")

# cheat -> the smoke workload it is evaluated on through the whole harness
THROUGH_THE_HARNESS = {"bf16_lse": "smoke_bt24_d32_v96", "all_tokens": "smoke_bt24_d32_v96"}
IN_PROCESS_ONLY = ("beta_swapped", "bf16_logits", "geometric_mixture", "no_softmax_term", "vocab_subset")
# the beta values at which a cheat computes the right thing
HONEST_AT = {"no_softmax_term": {0.0}, "geometric_mixture": {0.0, 1.0}, "beta_swapped": {0.5}}
# precision cheats are wrong by less: over the bound on every seed here, but not by 3x (the loss of bf16_logits
# was 1.36x its bound on its best call of 24, docs/tolerance-fused_linear_jsd.md)
LEAST_MULTIPLE = {"bf16_lse": 1.0, "bf16_logits": 1.0}
SHAPE = {"BT": 24, "D": 32, "V": 130}
BETAS = (0.0, 0.3, 0.5, 1.0)


def test_every_cheat_file_is_evaluated() -> None:
    assert cheats_of(TASK.id) == {*THROUGH_THE_HARNESS, *IN_PROCESS_ONLY}


@pytest.mark.slow  # a whole evaluation each (about 10 s on an idle 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(THROUGH_THE_HARNESS))
def test_fused_linear_jsd_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    """Rejected as incorrect_numerical; which output fails first depends on the call's beta (the loss for most)."""
    from pooled_evaluate import evaluate

    report = evaluate(TASK, assemble(TASK.id, cheat, tmp_path), "cpu", [THROUGH_THE_HARNESS[cheat]])
    assert report.status == "incorrect_numerical", f"{cheat}: {report.status}: {report.message}"
    assert any(f"output {name}" in report.message for name in ("loss", "dhs", "dWs")), report.message


def worst_ratio(outputs: tuple[object, ...], oracle: tuple[object, ...]) -> float:
    """The largest error / bound over the three outputs, under the task's rules."""
    from workbench.harness.checker.compare import compare

    tol = TASK.spec.tolerance
    ratios = []
    for name, out, want in zip(("loss", "dhs", "dWs"), outputs, oracle, strict=True):
        rule = tol.rule_for(name)
        ratios.append(compare(out, want, rule).rel_err / (rule.matrix_rel_fro or 1.0))  # type: ignore[arg-type]
    return max(ratios)


@pytest.mark.slow  # four calls of each of the 7 cheats and four of the honest naive solution, interpreted (~30 s)
def test_cheats_fail_where_they_are_wrong(tmp_path: Path, interpreter_fixed: None) -> None:
    """At each beta every cheat is over the bound (at least 3x, precision cheats at least 1x) unless its bug does
    not show at that beta, where it passes; honest_run passes everywhere (checked once per beta: it is the same
    naive solution in every assembled file)."""
    reference = import_file(TASK.file("reference.py"), "_rt_fljsd_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_fljsd_inputs").make_inputs
    cheats = sorted({*THROUGH_THE_HARNESS, *IN_PROCESS_ONLY})
    modules = {cheat: import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_fljsd_{cheat}") for cheat in cheats}
    for index, beta in enumerate(BETAS):
        made = make(SHAPE, 70 + index, "cpu")
        made["beta"] = beta
        want = reference.exact(**made)
        for cheat, module in modules.items():
            cheat_ratio = worst_ratio(module.run(**made), want)
            if beta in HONEST_AT.get(cheat, set()):
                assert cheat_ratio < 1, (cheat, beta, cheat_ratio)
            else:
                assert cheat_ratio > LEAST_MULTIPLE.get(cheat, 3.0), (cheat, beta, cheat_ratio)
        assert worst_ratio(module.honest_run(**made), want) < 0.5, beta
