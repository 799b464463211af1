"""Red-team cases for ``fused_linear_ce``: plausible wrong kernels, each wrong by far, one rejected through the
real harness (the others in process).

Each cheat in ``fused_linear_ce_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its kernels and helpers available) and evaluated on the CPU:

* ``ignored_rows_kept``: no ignore_index handling (targets clamped to [0, V)): ignored tokens join the loss, its
  mean and the gradients. Every output far off on every call (>= 50x).
* ``mean_over_all_tokens``: ignored tokens dropped from the sum, but the mean divides by BT: everything scaled by
  n / BT (>= 20x).
* ``vocab_prefix``: only the first V // 64 * 64 vocabulary entries are read (log-sum-exp, gradient, dW). Caught
  because no smoke V is a multiple of 64 (>= 5x); the registered vocabularies are.
* ``dw_tail_rows_dropped``: dW summed over the first BT // 16 * 16 tokens only (>= 20x on dW).
* ``lse_bf16_state``: the online log-sum-exp kept in bfloat16. A rounding of up to 2^-9 per 64-wide step is
  harmless over the 3-4 steps of a smoke vocabulary (it passes there, at most 0.45 of the bound) and fatal over
  the 2000-4000 steps of the registered ones (>= 7x over the bound, emulated in
  d2k-workbench bench false-failures fused_linear_ce): a case for the GPU (.gpu/fused_linear_ce.sh runs it there).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("fused_linear_ce")
NAMES = ("loss", "dh", "dW")

# cheat -> the smoke workload it is evaluated on through the whole harness, and the output it fails first
THROUGH_THE_HARNESS = {"mean_over_all_tokens": ("smoke_bt24_d64_v170", "loss")}
IN_PROCESS = {"ignored_rows_kept": 50.0, "mean_over_all_tokens": 20.0, "vocab_prefix": 5.0, "dw_tail_rows_dropped": 20.0}
REGISTERED_VOCABULARY_ONLY = ("lse_bf16_state",)


def test_every_cheat_file_is_evaluated() -> None:
    assert cheats_of(TASK.id) == {*IN_PROCESS, *REGISTERED_VOCABULARY_ONLY}


@pytest.mark.slow  # a whole evaluation (about 5 s on an idle 2-core CPU)
@pytest.mark.parametrize(("cheat", "where"), sorted(THROUGH_THE_HARNESS.items()))
def test_fused_linear_ce_cheat_rejected_on_cpu(cheat: str, where: tuple[str, str], tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, where[0], where[1], tmp_path)


def _ratios(outputs: tuple[torch.Tensor, ...], made: dict[str, torch.Tensor], reference: object) -> list[float]:
    """Each output's error over its bound, as the harness computes them (the reference's error included)."""
    from workbench.harness.checker.compare import compare

    want = reference.exact(**made)  # type: ignore[attr-defined]
    ref = reference.reference(**made)  # type: ignore[attr-defined]
    rules = [TASK.spec.tolerance.rule_for(name) for name in NAMES]
    results = [compare(o, w, rule, r) for o, w, rule, r in zip(outputs, want, rules, ref, strict=True)]
    return [res.rel_err / (res.bound or 1.0) for res in results]


@pytest.mark.slow  # kernels under the interpreter, in process (~2 s a cheat on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(IN_PROCESS))
def test_cheats_are_wrong_by_far_on_every_smoke_shape(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    """On fresh inputs of each smoke shape the cheat's worst output is at least IN_PROCESS[cheat] times its
    bound; its honest_run stays below half of every bound."""
    reference = import_file(TASK.file("reference.py"), "_rt_fused_linear_ce_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_fused_linear_ce_inputs").make_inputs
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_fused_linear_ce_{cheat}")
    for index, workload in enumerate(TASK.spec.smoke_workloads):
        made = make(workload.axes, 101 + index, "cpu")
        assert max(_ratios(module.run(**made), made, reference)) > IN_PROCESS[cheat], workload.name
        assert max(_ratios(module.honest_run(**made), made, reference)) < 0.5, workload.name


@pytest.mark.slow  # the cheat and its honest run under the interpreter (~2 s)
def test_bf16_log_sum_exp_is_within_the_bound_on_the_smoke_vocabularies(tmp_path: Path, interpreter_fixed: None) -> None:
    """The bfloat16 online state rounds 3-4 times on a smoke row: too few to show (the CPU cannot catch it). At the
    registered vocabularies (2000-4000 roundings) the same kernel is caught: .gpu/fused_linear_ce.sh runs it on
    qwen_bt4096_d8192, and `bench false-failures fused_linear_ce` emulates it at the registered vocabularies (>= 7x)."""
    reference = import_file(TASK.file("reference.py"), "_rt_fused_linear_ce_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_fused_linear_ce_inputs").make_inputs
    module = import_file(assemble(TASK.id, "lse_bf16_state", tmp_path), "_rt_fused_linear_ce_lse_bf16_state")
    workload = TASK.spec.smoke_workloads[0]
    made = make(workload.axes, 101, "cpu")
    assert max(_ratios(module.run(**made), made, reference)) < 1.0
