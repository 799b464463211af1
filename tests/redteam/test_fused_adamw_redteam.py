"""Red-team cases for ``fused_adamw``, through the whole harness on the CPU (the cheats in
``fused_adamw_cheats/`` are appended to the honest naive solution, its ``run`` renamed ``honest_run``):

* ``flat_buffer``: each list taken as one flat buffer from its first element (no work list). Caught because the
  solution process gets every element as its own allocation with gaps between them (tests/test_tensor_lists.py):
  on the CPU the interpreter's bounds check stops the first access past the first element; on a GPU the
  kernel reads and writes the gaps and every later element's state is wrong.
* ``stale_hyperparameters``: the first call's step, lr, betas, eps and weight decay reused for every later call.
  Caught because each trial's inputs draw a new step and lr from the trial's seed (hidden from the solution):
  the second fresh trial's state is wrong by far.

In process (tests/test_fused_adamw.py, which also holds the other wrong designs as variants of a reference step):

* ``skip_small``: tensors under 1024 elements never updated. Caught on the smoke workloads (tensors of 1-480
  elements) and, on a GPU, on the registered mixed_1000t, whose list holds 24 gains of 7-60 elements.
* ``no_bias_correction``: the step without 1 - beta^step. Caught on every input: the inputs draw step where
  beta2^step >= 0.01.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog

from .naive_cheats import assemble, cheats_of

REPO = Path(__file__).resolve().parents[2]
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("fused_adamw")


def test_every_cheat_file_is_evaluated() -> None:
    assert cheats_of(TASK.id) == {"flat_buffer", "stale_hyperparameters", "skip_small", "no_bias_correction"}


@pytest.mark.slow  # a whole evaluation (~5 s on an idle 2-core CPU)
def test_a_list_taken_as_one_flat_buffer_is_stopped(tmp_path: Path) -> None:
    report = evaluate(TASK, assemble(TASK.id, "flat_buffer", tmp_path), "cpu", ["smoke_adapters_6t"])
    assert report.status == "runtime_error" and "out-of-bounds" in report.message, report.message


@pytest.mark.slow  # a whole evaluation (~5 s on an idle 2-core CPU)
def test_hyperparameters_kept_from_the_first_call_fail_the_next(tmp_path: Path) -> None:
    report = evaluate(TASK, assemble(TASK.id, "stale_hyperparameters", tmp_path), "cpu", ["smoke_adapters_6t"])
    assert report.status == "state_mismatch", report.message
    assert "state params." in report.message or "state exp_avg" in report.message, report.message
