"""Adversarial Muon solutions: each must be rejected with the status it deserves; honest ones pass.

Each cheat in cheats/ is appended to the honest straightforward solution (tests/solutions/muon_naive.py,
its run renamed honest_run), so that the cheat is the only dishonest thing in the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness import EvalReport, evaluate
from workbench.harness.evaluate import resolve_device

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAIVE = REPO / "tests" / "solutions" / "muon_naive.py"

# cheat -> (expected status, expected rule or None, where it is expected to be caught)
CASES: dict[str, tuple[str, str | None]] = {
    "torch_fallback": ("policy_violation", "torch_compute"),
    "torch_only": ("policy_violation", "torch_compute"),
    "cublas_behind_triton": ("policy_violation", "torch_compute"),
    "address_cache": ("incorrect_numerical", None),
    "recycled_output": ("incorrect_numerical", None),
    "partial_write": ("incorrect_numerical", None),
    "scale_shortcut": ("incorrect_numerical", None),
    "four_steps": ("incorrect_numerical", None),
    "no_margin": ("incorrect_numerical", None),
    "input_mutation": ("input_mutated", None),
    "wrong_dtype": ("incorrect_dtype", None),
    "wrong_shape": ("incorrect_shape", None),
    "unchecked_steps": ("policy_violation", "contract"),
    "timer_patch": ("policy_violation", "timers"),
    "event_patch": ("policy_violation", "monkeypatch"),
    "side_stream": ("policy_violation", "streams"),
    "frame_peek": ("policy_violation", "introspection"),
    "gc_peek": ("policy_violation", "introspection"),
    "dynamic_code": ("policy_violation", "dynamic_code"),
    "getattr_escape": ("policy_violation", "introspection"),
    "threads": ("policy_violation", "threads"),
    "numpy_math": ("policy_violation", "numpy"),
    "segfault": ("crashed", None),
    "unbounded_alloc": ("runtime_error", None),
}
GPU_ONLY: dict[str, tuple[str, str | None]] = {
    "content_cache": ("policy_violation", "below_roofline_floor"),
}
TIMEOUTS = {"hang": 15.0}


def build(cheat: str, dest: Path) -> Path:
    """The honest core with its run renamed, followed by the cheat."""
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = dest / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "cheats" / f"{cheat}.py").read_text())
    return path


def run_case(cheat: str, tmp_path: Path, tasks_root: Path, device: str, workloads: list[str] | None = None) -> EvalReport:
    task = Catalog(tasks_root, REPO / "guidance").task("muon_orthogonalize")
    return evaluate(task, build(cheat, tmp_path), device, workloads, timeout_s=TIMEOUTS.get(cheat))


def assert_rejected(report: EvalReport, status: str, rule: str | None) -> None:
    assert report.status == status, f"{report.status}: {report.message}"
    if rule is not None:
        assert rule in {v.rule for v in report.violations}, report.violations
    assert report.message, "a rejection must say why"


# On the CPU the cheats run on a small smoke workload (the tiny_tasks fixture): what is rejected
# does not depend on the matrices' size, and the suite stays fast.
@pytest.mark.parametrize("cheat", sorted(CASES))
def test_cheat_rejected_on_cpu(cheat: str, tmp_path: Path, tiny_tasks: Path) -> None:
    status, rule = CASES[cheat]
    assert_rejected(run_case(cheat, tmp_path, tiny_tasks, "cpu"), status, rule)


def test_hang_times_out_and_harness_lives_on(tmp_path: Path, tiny_tasks: Path) -> None:
    report = run_case("hang", tmp_path, tiny_tasks, "cpu")
    assert report.status == "timeout"
    assert "did not finish within 15 s" in report.message


def test_every_cheat_file_has_a_case() -> None:
    files = {p.stem for p in (HERE / "cheats").glob("*.py")}
    assert files == set(CASES) | set(GPU_ONLY) | set(TIMEOUTS)


gpu = pytest.mark.skipif(resolve_device("auto") != "cuda", reason="needs a CUDA GPU")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cheat", sorted({**CASES, **GPU_ONLY}))
def test_cheat_rejected_on_gpu(cheat: str, tmp_path: Path) -> None:
    status, rule = {**CASES, **GPU_ONLY}[cheat]
    if cheat == "segfault":
        status = "runtime_error"  # an illegal address is a CUDA error on the GPU, not a signal
    assert_rejected(run_case(cheat, tmp_path, REPO / "tasks", "cuda", ["b32_m2048_n5464"]), status, rule)
