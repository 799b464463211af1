"""Red-team cases for ``causal_attention_fwd``: plausible wrong attention kernels, each rejected by the real harness.

Each cheat in ``causal_attention_fwd_cheats/`` is appended to the honest naive solution (its ``run``
renamed ``honest_run``) and evaluated on the CPU under the interpreter:

* ``non_causal``: no causal mask (bidirectional). Caught because later keys change every row but the
  last (inputs.py gives q and k real, position-dependent structure).
* ``diagonal_unmasked``: hidden tiles skipped, but the diagonal tile left unmasked (each query sees
  the rest of its 32-key tile). Caught because the attention is local (nearby keys score highest),
  so the leaked future keys carry much of each row's weight.
* ``gqa_modulo``: query head ``h`` reads key/value head ``h % Hkv``. Caught on the GQA smoke
  workloads (group sizes 2 and 4), where it differs from ``h // group``; right where Hkv = Hq.
* ``no_running_max``: ``exp(s)`` without subtracting a row maximum. Right on fresh inputs (scores
  stay below 30), caught on the call with q, k, v x4 (``[checks] input_scale``), where exp overflows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAIVE = REPO / "tests" / "solutions" / "causal_attention_fwd_naive.py"
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("causal_attention_fwd")

# cheat -> (the smoke workload it is evaluated on, a fragment of the expected failure message)
CASES = {
    "non_causal": ("smoke_b1_h2_s128_d64", "matrices exceed the tolerance"),
    "diagonal_unmasked": ("smoke_b1_h2_s128_d64", "matrices exceed the tolerance"),
    "gqa_modulo": ("smoke_b2_hq4_hkv2_s80_d32", "matrices exceed the tolerance"),
    "no_running_max": ("smoke_b1_h2_s128_d64", "NaN or Inf"),
}


def cheat_file(cheat: str, tmp_path: Path) -> Path:
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "causal_attention_fwd_cheats" / f"{cheat}.py").read_text())
    return path


def test_every_cheat_file_has_a_case() -> None:
    assert {p.stem for p in (HERE / "causal_attention_fwd_cheats").glob("*.py")} == set(CASES)


@pytest.mark.slow  # every case is a whole evaluation (5-14 s each on a 2-core CPU)
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_causal_attention_fwd_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    workload, reason = CASES[cheat]
    report = evaluate(TASK, cheat_file(cheat, tmp_path), "cpu", [workload])
    assert report.status == "incorrect_numerical", f"{report.status}: {report.message}"
    assert "output o" in report.message and reason in report.message, report.message


def test_cheats_are_wrong_by_far_on_fresh_inputs(tmp_path: Path) -> None:
    """In process, on one seed per smoke shape: each wrong-math cheat is >= 10x over the bound where it
    is wrong (gqa_modulo honest where Hkv = Hq); the max-free softmax is within the bound on fresh
    inputs and NaN/Inf only on the x4-scaled call."""
    import torch

    from workbench.harness.checker.compare import compare
    from workbench.harness.solution import interpreter_fix

    ref = import_file(TASK.file("reference.py"), "_rt_caf_reference")
    inputs = import_file(TASK.file("inputs.py"), "_rt_caf_inputs")
    tol = TASK.spec.tolerance
    assert tol.matrix_rel_fro is not None
    scale = TASK.spec.checks.input_scale
    shapes = [({"B": 1, "Hq": 2, "Hkv": 2, "S": 64, "D": 32}, 5), ({"B": 1, "Hq": 4, "Hkv": 2, "S": 48, "D": 32}, 6)]
    uninstall = interpreter_fix.install()
    try:
        for cheat in sorted(CASES):
            module = import_file(cheat_file(cheat, tmp_path), f"_rt_caf_{cheat}")
            for axes, seed in shapes:
                d = inputs.make_inputs(axes, seed, "cpu")
                result = compare(module.run(**d), ref.exact(**d), tol)
                if cheat == "no_running_max" or (cheat == "gqa_modulo" and axes["Hq"] == axes["Hkv"]):
                    assert result.ok, (cheat, axes, result.message)
                else:
                    assert result.rel_err > 10 * tol.matrix_rel_fro, (cheat, axes, result.rel_err)
                if cheat == "no_running_max":
                    big = {k: v * scale if isinstance(v, torch.Tensor) else v for k, v in d.items()}
                    assert not compare(module.run(**big), ref.exact(**big), tol).ok
    finally:
        uninstall()
