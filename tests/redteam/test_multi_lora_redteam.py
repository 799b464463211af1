"""Red-team cases for ``multi_lora``: plausible wrong kernels, each wrong by far,
one rejected through the real harness (the others in process).

Each cheat in ``multi_lora_cheats/`` is appended to the honest naive solution (its ``run`` renamed
``honest_run``; its ``_token_kernel`` available) and evaluated on the CPU:

* ``segment_adapter_zero``: every token served with the first request's adapter (a single-adapter kernel).
  Caught token by token (``views = "rows"``): the other requests' deltas are another adapter's.
* ``scaling_dropped``: the delta added without LoRA's ``scaling``. Caught on every token with an adapter.
* ``no_adapter_as_zero``: a request without an adapter (-1) served with adapter 0. Caught on those tokens:
  every batch of three requests or more has one (inputs.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

from .naive_cheats import assemble, assert_rejected, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("multi_lora")
CASES = {
    "segment_adapter_zero": "smoke_t40_a3_r16",
    "scaling_dropped": "smoke_t40_a3_r16",
    "no_adapter_as_zero": "smoke_t40_a3_r16",
}

# evaluated through the whole harness (the suite's time is counted): one per task, the end-to-end path; every
# cheat is run in process (the others' rejection is the same comparison)
THROUGH_THE_HARNESS = ("segment_adapter_zero",)


def test_every_cheat_file_has_a_case() -> None:
    assert cheats_of(TASK.id) == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (4-8 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", THROUGH_THE_HARNESS)
def test_multi_lora_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    assert_rejected(TASK, cheat, CASES[cheat], "y", tmp_path)


@pytest.mark.slow  # kernels under the interpreter, in process (2-7 s on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_cheats_are_wrong_by_far_on_the_tokens_they_get_wrong(cheat: str, tmp_path: Path, interpreter_fixed: None) -> None:
    """In process, on two shapes: the cheat's worst token is >= 10x over the bound, and honest_run passes."""
    from workbench.harness.checker.compare import compare

    reference = import_file(TASK.file("reference.py"), "_rt_multi_lora_reference")
    make = import_file(TASK.file("inputs.py"), "_rt_multi_lora_inputs").make_inputs
    module = import_file(assemble(TASK.id, cheat, tmp_path), f"_rt_multi_lora_{cheat}")
    rule = TASK.spec.tolerance
    for seed, workload in enumerate(TASK.spec.smoke_workloads[:2], start=21):
        made = make(workload.axes, seed, "cpu")
        want = reference.rows({"y": reference.exact(**made)}, made)["y"]
        wrong = compare(reference.rows({"y": module.run(**made)}, made)["y"], want, rule)
        assert wrong.rel_err > 10 * (rule.matrix_rel_fro or 0.0), (workload.name, wrong.rel_err)
        honest = compare(reference.rows({"y": module.honest_run(**made)}, made)["y"], want, rule)
        assert honest.ok, (workload.name, honest.message)
