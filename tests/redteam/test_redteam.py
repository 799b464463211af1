"""Adversarial Muon solutions: each must be rejected with the status it deserves; honest ones pass.

Each cheat in cheats/ is appended to the honest straightforward solution (tests/solutions/muon_naive.py,
its run renamed honest_run), so that the cheat is the only dishonest thing in the file. The first layer
that sees a cheat names it (usually the static policy); LAYERED cheats are run a second time with the
static policy switched off, to show that the layers behind it (the sandbox, the checker in its own
process, the runtime guard) reject them too. honest/ holds honest variants the policy once refused.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.device import resolve_device
from workbench.harness.host import sandbox
from workbench.harness.protocol.report import EvalReport

pytestmark = pytest.mark.slow  # every case is a whole evaluation (4-17 s each on a 2-core CPU)

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
    # a wild read: on the CPU the interpreter's bounds check refuses it (it read host memory before), on
    # the GPU the illegal address is a CUDA error: runtime_error both ways, never the harness's crash
    "segfault": ("runtime_error", None),
    "unbounded_alloc": ("runtime_error", None),
}
GPU_ONLY: dict[str, tuple[str, str | None]] = {
    "call_count_gate": ("policy_violation", "torch_compute"),
}
TIMEOUTS = {"hang": 15.0}
# Cheats of the classes the evaluation-integrity issue found (forged results, secrets read from files,
# sys through attributes, tensor subclasses, switching the policy off, Python-side math, a shell).
CASES.update(
    {
        "content_cache": ("policy_violation", "torch_compute"),
        "forge_result_os": ("policy_violation", "files"),
        "forge_result_torch": ("policy_violation", "files"),
        "secret_from_files": ("policy_violation", "files"),
        "sys_via_attribute": ("policy_violation", "introspection"),
        "from_os_import_sys": ("policy_violation", "introspection"),
        "tensor_subclass": ("policy_violation", "tensor_subclass"),
        "disable_modes": ("policy_violation", "private_attribute"),
        "clear_violations": ("policy_violation", "private_attribute"),
        "python_math": ("policy_violation", "python_compute"),
        "os_system": ("policy_violation", "processes"),
    }
)
# Cheats of the classes issue 26 found: dangerous objects re-exported under innocent module paths, and
# callables that take attribute names built at run time (each passed the name-spelling policy; the
# first two then replaced the runtime guard and passed eager torch math).
CASES.update(
    {
        "reexport_attrgetter": ("policy_violation", "introspection"),
        "getattr_from_fqn": ("policy_violation", "introspection"),
        "reexport_ctypes": ("policy_violation", "ctypes"),
        "reexport_json_codecs": ("policy_violation", "files"),
        "triton_cache_manager": ("policy_violation", "files"),
    }
)
# Issue 26: numpy on the interpreter's tiles inside a @triton.jit body (no GPU build compiles it).
CASES["interpreter_numpy_handle"] = ("policy_violation", "numpy")
# With the static policy off: what the layers behind it make of the same cheats.
LAYERED: dict[str, tuple[str, str | None]] = {
    "forge_result_os": ("incorrect_numerical", None),
    "forge_result_torch": ("compile_error", None),  # the sandbox refuses the write at import
    "secret_from_files": ("policy_violation", "torch_compute"),
    "sys_via_attribute": ("incorrect_numerical", None),
    "from_os_import_sys": ("policy_violation", "monkeypatch"),
    "tensor_subclass": ("runtime_error", None),  # round four: what run returns is checked by exact type first
    "python_math": ("policy_violation", "torch_compute"),
    "timer_patch": ("policy_violation", "patched_timer"),
    "gc_peek": ("incorrect_numerical", None),
}
LAYERED["interpreter_numpy_handle"] = ("compile_error", None)  # compiled for the GPU before it is interpreted
HONEST = ("autotune", "input_parameter", "global_memo", "libdevice_fma", "own_plan")


def build(cheat: str, dest: Path, folder: str = "cheats", text: str | None = None) -> Path:
    """The honest core with its run renamed, followed by the cheat."""
    core = NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = dest / f"{cheat}.py"
    helpers = (HERE / "torch_muon.py").read_text()
    path.write_text(
        core + "\n\n" + helpers + "\n\n" + (text if text is not None else (HERE / folder / f"{cheat}.py").read_text())
    )
    return path


def run_case(
    cheat: str, tmp_path: Path, tasks_root: Path, device: str, workloads: list[str] | None = None, static_policy: bool = True
) -> EvalReport:
    task = Catalog(tasks_root, REPO / "guidance").task("muon_orthogonalize")
    return evaluate(task, build(cheat, tmp_path), device, workloads, timeout_s=TIMEOUTS.get(cheat), static_policy=static_policy)


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


@pytest.mark.parametrize("cheat", sorted(LAYERED))
def test_cheat_rejected_behind_the_static_policy(cheat: str, tmp_path: Path, tiny_tasks: Path) -> None:
    status, rule = LAYERED[cheat]
    assert_rejected(run_case(cheat, tmp_path, tiny_tasks, "cpu", static_policy=False), status, rule)


needs_sandbox = pytest.mark.skipif(
    sandbox.wrap(["true"], device="cpu", env={})[1].kind != "bubblewrap", reason="bubblewrap cannot start here"
)


@needs_sandbox
def test_a_shell_from_the_solution_leaves_no_trace_outside(tmp_path: Path, tiny_tasks: Path) -> None:
    mark = Path("/tmp/d2k-redteam-os-system-was-here")
    mark.unlink(missing_ok=True)
    report = run_case("os_system", tmp_path, tiny_tasks, "cpu", static_policy=False)
    assert report.sandbox.startswith("bubblewrap"), report.sandbox
    assert not mark.exists()


@needs_sandbox
def test_sandbox_denies_files_environment_network_and_processes(
    tmp_path: Path, tiny_tasks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the static policy, the sandbox still denies writes outside the scratch folder, the parent's
    environment, the task's expert and the sessions, the network and the view of other processes."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("D2K_PROBE_VISIBLE", "1")
    marker = tmp_path / "outside"
    marker.mkdir()
    forbidden = [
        str(tiny_tasks / "muon_orthogonalize" / "expert.py"),
        str(REPO / "tasks" / "muon_orthogonalize" / "expert.py"),
        str(REPO / "guidance" / "muon_orthogonalize" / "rubric.toml"),
        str(Path(__file__)),
    ]
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        text = (
            (HERE / "probes" / "escape_attempts.py")
            .read_text()
            .format(marker_dir=marker, forbidden=forbidden, port=server.getsockname()[1])
        )
        task = Catalog(tiny_tasks, REPO / "guidance").task("muon_orthogonalize")
        report = evaluate(task, build("escape_attempts", tmp_path, text=text), "cpu", static_policy=False)
    assert report.status == "passed", report.message
    assert list(marker.iterdir()) == []
    assert not Path("/etc/d2k-written-by-solution").exists()


@pytest.mark.parametrize("variant", HONEST)
def test_honest_variant_passes(variant: str, tmp_path: Path, tiny_tasks: Path) -> None:
    task = Catalog(tiny_tasks, REPO / "guidance").task("muon_orthogonalize")
    report = evaluate(task, build(variant, tmp_path, "honest"), "cpu")
    assert report.status == "passed", report.message
    assert report.violations == []


def test_hang_times_out_and_harness_lives_on(tmp_path: Path, tiny_tasks: Path) -> None:
    report = run_case("hang", tmp_path, tiny_tasks, "cpu")
    assert report.status == "timeout"
    assert "did not finish within 15 s" in report.message


def test_every_cheat_file_has_a_case() -> None:
    files = {p.stem for p in (HERE / "cheats").glob("*.py")}
    assert files == set(CASES) | set(GPU_ONLY) | set(TIMEOUTS)
    assert set(LAYERED) <= files
    assert {p.stem for p in (HERE / "honest").glob("*.py")} == set(HONEST)


gpu = pytest.mark.skipif(resolve_device("auto") != "cuda", reason="needs a CUDA GPU")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cheat", sorted({**CASES, **GPU_ONLY}))
def test_cheat_rejected_on_gpu(cheat: str, tmp_path: Path) -> None:
    status, rule = {**CASES, **GPU_ONLY}[cheat]
    assert_rejected(run_case(cheat, tmp_path, REPO / "tasks", "cuda", ["b32_m2048_n5464"]), status, rule)


# rmsnorm_bwd: wrong-math cheats, each appended to the honest naive solution (its run renamed honest_run).
RMSNORM_NAIVE = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
RMSNORM_CASES = {"first_rows": "output dW", "no_mean_term": "output dX"}


@pytest.mark.parametrize("cheat", sorted(RMSNORM_CASES))
def test_rmsnorm_bwd_cheat_rejected_on_cpu(cheat: str, tmp_path: Path) -> None:
    core = RMSNORM_NAIVE.read_text().replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"{cheat}.py"
    path.write_text(core + "\n\n" + (HERE / "rmsnorm_bwd_cheats" / f"{cheat}.py").read_text())
    task = Catalog(REPO / "tasks", REPO / "guidance").task("rmsnorm_bwd")
    report = evaluate(task, path, "cpu", ["smoke_m64_n256"])
    assert_rejected(report, "incorrect_numerical", None)
    assert RMSNORM_CASES[cheat] in report.message
