"""The harness as a user meets it: honest code passes, the template fails clearly, bad usage is exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
from pooled_evaluate import evaluate
from typer.testing import CliRunner

from workbench.catalog import Catalog
from workbench.cli import app
from workbench.harness.host.evaluate import worker_env
from workbench.harness.policy.checker import check_source

REPO = Path(__file__).resolve().parent.parent
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize")
NAIVE = REPO / "tests" / "solutions" / "muon_naive.py"
runner = CliRunner()


@pytest.mark.slow
def test_honest_naive_solution_passes_every_smoke_workload() -> None:
    report = evaluate(TASK, NAIVE, "cpu")
    assert report.status == "passed", report.message
    assert [w.name for w in report.workloads] == ["smoke_b8_m64_n200", "smoke_b8_m128_n384"]
    assert all(w.status == "passed" and w.rel_err is not None and w.rel_err > 0 for w in report.workloads)
    # 2 fresh, 1 refilled, 1 scaled, each compared; on the CPU the later workloads get the fresh ones only
    assert [w.trials for w in report.workloads] == [4, 2]
    assert report.triton_launches > 0
    assert report.violations == []
    # which kernels one call launched, per workload (shown to the judge): 5 steps x 3 batched matmuls
    assert all(w.kernels == {"_sumsq_kernel": 1, "_normalise_kernel": 1, "_bmm_kernel": 15} for w in report.workloads)
    assert report.harness_version.startswith("h-") and not report.harness_version.endswith("-nopolicy")
    # where the time went: the first call (compile) once, correctness per workload, no timing on the CPU
    first, second = report.workloads
    assert set(first.phases) == {"first_call", "correctness"} and set(second.phases) == {"correctness"}
    totals = report.phase_totals()
    assert totals["start"] > 0 and totals["first_call"] > 0 and totals["correctness"] > 0
    assert abs(sum(totals.values()) - report.duration_s) < 1e-6


@pytest.mark.slow  # a whole CPU evaluation in worker processes (5-7 s on a 2-core CPU)
def test_template_fails_with_a_clear_runtime_error() -> None:
    report = evaluate(TASK, TASK.file("template.py"), "cpu", ["smoke_b8_m64_n200"])
    assert report.status == "runtime_error"
    assert "NotImplementedError" in report.message and "line" in report.message
    # nothing was compared: errors are "not measured" (None, shown as "-"), never a perfect 0.0
    assert report.workloads[0].rel_err is None and report.workloads[0].max_abs_err is None


@pytest.mark.slow  # a whole CPU evaluation in worker processes (5-7 s on a 2-core CPU)
def test_the_cpu_solution_process_runs_one_thread(tmp_path: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("torch starts one thread on a 1-core machine anyway: nothing to tell apart")
    probe = tmp_path / "threads.py"
    probe.write_text("import torch\n\n\ndef run(G, steps):\n    raise RuntimeError(f'threads={torch.get_num_threads()}')\n")
    # torch.get_num_threads is not on the policy's allow-list: the probe reads it past the static policy
    report = evaluate(TASK, probe, "cpu", ["smoke_b8_m64_n200"], static_policy=False)
    assert report.status == "runtime_error" and "threads=1" in report.message, report.message


def test_syntax_error_is_a_compile_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\ndef run(G, steps)\n    return G\n")
    report = evaluate(TASK, bad, "cpu", ["smoke_b8_m64_n200"])
    assert report.status == "compile_error"
    assert "line 2" in report.message


def test_static_policy_names_rule_and_line() -> None:
    source = "import torch\nimport numpy as np\n\ndef run(G, steps):\n    return torch.compile(G)\n"
    violations = check_source(source)
    assert [(v.rule, v.line) for v in violations] == [("numpy", 2), ("torch_compile", 5)]


def test_static_policy_allows_honest_solutions() -> None:
    assert check_source(NAIVE.read_text()) == []
    assert check_source(TASK.file("template.py").read_text()) == []


def test_api_keys_are_not_passed_to_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t")
    env = worker_env("cpu")
    assert not {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_SERVICE_TOKEN"} & set(env)
    assert env["TRITON_INTERPRET"] == "1"


@triton.jit
def _bf16_dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


def test_interpreter_bf16_dot_is_fixed_inside_the_harness_only() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("checks the Triton interpreter (set TRITON_INTERPRET=1; the suite's conftest does)")
    from workbench.harness.solution import interpreter_fix

    a = torch.randn(16, 16).to(torch.bfloat16)
    b = torch.randn(16, 16).to(torch.bfloat16)
    expected = a.float() @ b.float()
    c = torch.empty(16, 16)
    _bf16_dot_kernel[(1,)](a, b, c, N=16)
    assert not torch.allclose(c, expected, rtol=1e-2, atol=1e-2)  # the interpreter's bug, unpatched
    uninstall = interpreter_fix.install()
    try:
        _bf16_dot_kernel[(1,)](a, b, c, N=16)
    finally:
        uninstall()
    assert torch.allclose(c, expected, rtol=1e-5, atol=1e-5)


@triton.jit
def _fp8_cast_kernel(x_ptr, e4_ptr, e5_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(e4_ptr + r, x.to(tl.float8e4nv))
    tl.store(e5_ptr + r, x.to(tl.float8e5))


def test_interpreter_fp8_casts_round_and_saturate_as_the_gpu_inside_the_harness_only() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("checks the Triton interpreter (set TRITON_INTERPRET=1; the suite's conftest does)")
    from workbench.harness.solution import interpreter_fix

    # 127.9 rounds up to 128 (a carry out of an odd exponent field: the unpatched interpreter gives 64);
    # 1000 and -1e6 saturate; ties round to even; NaN stays NaN
    special = [127.9, 1000.0, -1e6, 0.0, -0.0, 1.0625, 1.1875, 3e-3, float("nan")]
    x = torch.cat([torch.tensor(special), torch.randn(64 - len(special)) * 100])
    e4 = torch.empty(64, dtype=torch.float8_e4m3fn)
    e5 = torch.empty(64, dtype=torch.float8_e5m2)
    _fp8_cast_kernel[(1,)](x, e4, e5, N=64)
    assert float(e4[0]) == 64.0  # the interpreter's bug, unpatched
    uninstall = interpreter_fix.install()
    try:
        _fp8_cast_kernel[(1,)](x, e4, e5, N=64)
    finally:
        uninstall()
    want4 = x.clamp(-448, 448).to(torch.float8_e4m3fn)
    want5 = x.clamp(-57344, 57344).to(torch.float8_e5m2)
    assert torch.equal(e4.view(torch.uint8), want4.view(torch.uint8))  # bit for bit, NaN (0x7F) included
    assert torch.equal(e5.view(torch.uint8), want5.view(torch.uint8))
    assert e4[:4].float().tolist() == [128.0, 448.0, -448.0, 0.0] and e4[5:7].float().tolist() == [1.0, 1.25]


@triton.jit
def _bf16_cast_kernel(x_ptr, y_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(y_ptr + r, tl.load(x_ptr + r).to(tl.bfloat16))


def test_interpreter_bf16_casts_round_to_nearest_even_inside_the_harness_only() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("checks the Triton interpreter (set TRITON_INTERPRET=1; the suite's conftest does)")
    from workbench.harness.solution import interpreter_fix

    # 1 + 3 * 2^-9 lies past the midpoint between two bfloat16 values (the unpatched cast truncates it
    # down); 1 + 2^-8 is a tie that rounds to even; past the largest bfloat16 rounds to infinity; NaN stays
    special = [1.0 + 3 * 2**-9, 1.0 + 2**-8, -(1.0 + 3 * 2**-9), 3.4e38, 0.0, -0.0, float("inf"), float("nan")]
    x = torch.cat([torch.tensor(special), torch.randn(256 - len(special)) * 10.0 ** torch.randint(-30, 30, (248,))])
    y = torch.empty(256, dtype=torch.bfloat16)
    _bf16_cast_kernel[(1,)](x, y, N=256)
    assert float(y[0]) == 1.0  # the interpreter's truncation, unpatched
    uninstall = interpreter_fix.install()
    try:
        _bf16_cast_kernel[(1,)](x, y, N=256)
    finally:
        uninstall()
    want = x.to(torch.bfloat16)  # torch rounds to nearest even, as the GPU's cvt.rn.bf16.f32
    numbers = ~want.isnan()
    assert torch.equal(y[numbers].view(torch.int16), want[numbers].view(torch.int16)) and bool(y[7].isnan())
    assert y[:4].float().tolist() == [1.0078125, 1.0, -1.0078125, float("inf")]


@triton.jit
def _int_index_kernel(x_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(out_ptr + r, x * 3 + 7 - r)  # int32: wraps past the type's range, as a GPU does


def test_interpreter_overflow_checks_are_off_inside_the_harness_only_and_change_no_result() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("checks the Triton interpreter (set TRITON_INTERPRET=1; the suite's conftest does)")
    from triton.runtime import interpreter

    from workbench.harness.solution import interpreter_fix

    options = interpreter.interpreter_builder.options
    assert options.sanitize_overflow and not options.debug  # the interpreter's defaults: checked, then dropped
    x = torch.tensor([0, 1, -5, 2**31 - 1, -(2**31), 715827882, 10**9, -(10**9)], dtype=torch.int32)
    before, after = torch.empty_like(x), torch.empty_like(x)
    _int_index_kernel[(1,)](x, before, N=8)
    uninstall = interpreter_fix.install()
    try:
        assert not interpreter.interpreter_builder.options.sanitize_overflow
        _int_index_kernel[(1,)](x, after, N=8)
    finally:
        uninstall()
    assert interpreter.interpreter_builder.options is options  # restored
    assert torch.equal(before, after)  # the same values, overflowing lanes included
    wrapped = ((x.long() * 3 + 7 - torch.arange(8)) + 2**31) % 2**32 - 2**31
    assert torch.equal(after.long(), wrapped)


def _eval_cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["eval", "muon_orthogonalize", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow  # a whole CPU evaluation in worker processes (5-7 s on a 2-core CPU)
def test_eval_json_shape_and_exit_code_for_a_failure() -> None:
    code, out, _ = _eval_cli(str(TASK.file("template.py")), "--device", "cpu", "--workload", "smoke_b8_m64_n200", "--json")
    assert code == 1
    data = json.loads(out)
    assert set(data) == {"task", "status", "device", "workloads", "violations", "message", "sandbox", "duration_s", "phases_s"}
    assert data["duration_s"] > 0 and data["phases_s"]["start"] > 0
    assert data["status"] == "runtime_error"
    assert set(data["workloads"][0]) == {
        "name",
        "status",
        "max_abs_err",
        "rel_err",
        "error_bound",
        "latency_ms",
        "reference_ms",
        "speedup",
        "floor_ms",
        "floor_fraction",
        "reference_floor_ms",
        "reference_floor_fraction",
        "library_ms",
        "library_speedup",
        "draws",
        "law_p",
        "law_level",
    }
    assert data["workloads"][0]["law_p"] is None  # nothing drawn: a sampler's law tests only


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.py", "--device", "cpu"], "solution file not found"),
        ([str(NAIVE), "--device", "tpu"], "unknown device 'tpu'"),
        ([str(NAIVE), "--device", "cpu", "--workload", "huge"], "has no workload 'huge'"),
    ],
)
def test_eval_bad_usage_is_exit_2(args: list[str], message: str) -> None:
    code, _out, err = _eval_cli(*args)
    assert code == 2
    assert message in err


@pytest.mark.parametrize("bug", [KeyError("workloads"), ValueError("bad shape in the checker")])
def test_an_internal_error_is_a_bug_with_its_traceback_not_bad_usage(monkeypatch: pytest.MonkeyPatch, bug: Exception) -> None:
    import sys

    eval_cmd = sys.modules["workbench.cli.eval_cmd"]  # the module (the package exports the command's function)

    def broken(*args: object, **kwargs: object) -> None:
        raise bug

    monkeypatch.setattr(eval_cmd, "evaluate", broken)
    result = runner.invoke(app, ["eval", "muon_orthogonalize", str(NAIVE), "--device", "cpu"])
    assert result.exit_code == 1  # not 2: nothing the user did wrong
    assert result.exception is bug  # the traceback is shown, not swallowed into one line
    assert "error:" not in result.stderr


def _task_copy(tmp_path: Path, file: str, old: str, new: str) -> Path:
    import shutil

    root = tmp_path / "tasks"
    shutil.copytree(TASK.dir, root / TASK.id)
    path = root / TASK.id / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return root


def test_a_task_reference_that_cannot_be_imported_is_a_task_error_exit_2(tmp_path: Path) -> None:
    tasks = _task_copy(tmp_path, "reference.py", "import torch\n", "import torch\nimport no_such_module_d2k\n")
    result = runner.invoke(app, ["eval", TASK.id, str(NAIVE), "--device", "cpu", "--tasks-dir", str(tasks)])
    assert result.exit_code == 2, result.output
    assert "task_error" in result.stderr and "ModuleNotFoundError" in result.stderr and "reference.py line" in result.stderr
    assert "Traceback" not in result.output and result.stderr.count("no_such_module_d2k") == 1  # one message


@pytest.mark.slow
def test_a_task_oracle_that_fails_is_the_tasks_fault_not_the_solutions(tmp_path: Path) -> None:
    tasks = _task_copy(
        tmp_path,
        "reference.py",
        "def exact(",
        "def exact(*args, **kwargs):\n    raise RuntimeError('oracle broke')\n\n\ndef _unused(",
    )
    report = evaluate(Catalog(tasks, REPO / "guidance").task(TASK.id), NAIVE, "cpu", ["smoke_b8_m64_n200"])
    assert report.status == "task_error"
    assert "oracle broke" in report.message and "not the solution" in report.message
    assert report.workloads[0].rel_err is None and report.workloads[0].max_abs_err is None  # nothing was measured


@pytest.mark.slow
def test_the_checker_running_out_of_device_memory_is_charged_to_the_solution(tmp_path: Path) -> None:
    # A solution that hoards device memory must not turn its failure into the task's fault (task_error,
    # exit 2, "not the solution's"): the checker's out-of-memory is the solution's runtime_error.
    tasks = _task_copy(
        tmp_path,
        "reference.py",
        "def exact(",
        "def exact(*args, **kwargs):\n    raise torch.OutOfMemoryError('CUDA out of memory')\n\n\ndef _unused(",
    )
    report = evaluate(Catalog(tasks, REPO / "guidance").task(TASK.id), NAIVE, "cpu", ["smoke_b8_m64_n200"])
    assert report.status == "runtime_error"
    assert "out of device memory in the checker" in report.message


def test_task_code_failures_are_the_tasks_except_running_out_of_device_memory() -> None:
    from workbench.harness.checker.correctness import CheckerOutOfMemory, TaskFault, task_code_failed

    fault = task_code_failed("the task's exact(...)", RuntimeError("bug"))
    assert isinstance(fault, TaskFault) and "exact(...) failed: RuntimeError: bug" in str(fault)
    assert isinstance(task_code_failed("the task's exact(...)", torch.OutOfMemoryError("CUDA out of memory")), CheckerOutOfMemory)
    # the message says who held the device's memory, from CUDA's own out-of-memory text
    text = (
        "CUDA out of memory. Tried to allocate 12.00 MiB. GPU 0 has a total capacity of 79.18 GiB of which 4.62 MiB is "
        "free. Including non-PyTorch memory, this process has 22.25 GiB memory in use. Process 546 has 56.88 GiB memory "
        "in use. Of the allocated memory 20.96 GiB is allocated by PyTorch"
    )
    oom = task_code_failed("the checker's copies of the inputs", torch.OutOfMemoryError(text))
    assert "(the checker's copies of the inputs; checker 22.25 GiB, other processes 56.88 GiB, of 79.18 GiB)" in str(oom)
    plain = task_code_failed("x", torch.OutOfMemoryError("out of memory"))
    assert "(x)" in str(plain)


def test_a_folder_given_as_the_solution_is_named_as_a_folder(tmp_path: Path) -> None:
    code, _, err = _eval_cli(str(tmp_path), "--device", "cpu")
    assert code == 2 and "is a folder" in err and "not found" not in err


def test_the_worker_processes_end_without_the_interpreters_teardown(tmp_path: Path) -> None:
    """A process that called exit_now leaves its flushed output and its code, and no finaliser runs."""
    script = tmp_path / "ends.py"
    script.write_text(
        "import atexit, sys\n"
        "from workbench.harness.solution.fast_exit import exit_now\n"
        "atexit.register(lambda: print('teardown ran'))\n"
        "print('said before the end')\n"
        "exit_now(3)\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=REPO)
    assert done.returncode == 3 and done.stdout == "said before the end\n"


def test_each_workload_is_announced_once_as_soon_as_the_checker_has_moved_on_from_it() -> None:
    import os as _os

    from workbench.harness.host.evaluate import _read_results
    from workbench.harness.protocol.messages import WorkerResult
    from workbench.harness.protocol.report import EvalReport, WorkloadResult

    def line(current: str | None, *done: tuple[str, str]) -> str:
        report = EvalReport(task="t", solution="s.py", device="cpu", status="runtime_error")
        report.workloads = [WorkloadResult(name=n, status=s) for n, s in done]  # type: ignore[arg-type]
        return WorkerResult(complete=False, current_workload=current, report=report).model_dump_json() + "\n"

    read, write = _os.pipe()
    lines = [
        line("w1", ("w1", "harness_error")),  # w1 starts
        line(None, ("w1", "passed")),  # w1 judged
        line("w2", ("w1", "passed"), ("w2", "harness_error")),  # w2 starts
        "not json\n",
        line(None, ("w1", "passed"), ("w2", "incorrect_numerical")),
    ]
    _os.write(write, "".join(lines).encode())
    _os.close(write)
    seen: list[tuple[str, str]] = []
    results: list[WorkerResult] = []
    _read_results(read, results, lambda w: seen.append((w.name, w.status)))
    assert seen == [("w1", "passed"), ("w2", "incorrect_numerical")]
    assert len(results) == 1 and [w.name for w in results[0].report.workloads] == ["w1", "w2"]


@pytest.mark.slow  # a whole CPU evaluation in worker processes
def test_a_task_whose_inputs_do_not_repeat_from_a_seed_is_stopped_as_the_tasks_fault(tmp_path: Path) -> None:
    # Sampled timed calls and inputs made in the solution's process are checked on inputs made again from
    # the trial's seed: a generator that does not repeat (torch.multinomial with replacement on a GPU) would
    # fail honest solutions at random, so the harness names the task before any call.
    drift = (
        "\n\n_made = make_inputs\n_count = [0]\n\n\ndef make_inputs(workload, seed, device):\n"
        "    made = _made(workload, seed, device)\n    _count[0] += 1\n"
        "    made['G'] = made['G'] + 1e-3 * _count[0]\n    return made\n"
    )
    tasks = _task_copy(tmp_path, "inputs.py", "\n", "\n")
    path = tasks / TASK.id / "inputs.py"
    path.write_text(path.read_text() + drift)
    report = evaluate(Catalog(tasks, REPO / "guidance").task(TASK.id), NAIVE, "cpu", ["smoke_b8_m64_n200"])
    assert report.status == "task_error", report.message
    assert "not repeatable" in report.message and "'G'" in report.message and "not the solution" in report.message
