"""Integrity, round four: nothing of the solution runs outside the guarded window, and no tensor value
leaves it unseen. One test per class (the static spellings are in test_round4_static.py, the warm start's
fresh mounts in tests/test_warm_solution.py).

The runtime cases run with the static policy off: the policy refuses these spellings first, and what is
shown here is that the layer behind it holds on its own (window_exit.py, host_reads.py). Each cheat in
round4_cheats/ is appended to the honest naive Muon solution (its run renamed honest_run), as in
test_redteam.py. GPU spellings are at the end, skipped cleanly without a GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pooled_evaluate import evaluate

from tests.redteam.test_redteam import build
from workbench.catalog import Catalog
from workbench.device import resolve_device
from workbench.harness.protocol.report import EvalReport
from workbench.harness.solution.guard import Guard, snapshot
from workbench.harness.solution.host_reads import HostReadRefused
from workbench.harness.solution.window_exit import MAX_TEXT, SolutionRaised, accept_result, describe_raised

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RMSNORM_NAIVE = (REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py").read_text()


def evaluate_cheat(cheat: str, tmp_path: Path, tasks_root: Path, *, static_policy: bool = False) -> EvalReport:
    task = Catalog(tasks_root, REPO / "guidance").task("muon_orthogonalize")
    return evaluate(task, build(cheat, tmp_path, folder="round4_cheats"), "cpu", static_policy=static_policy)


# -- class 1: what run returns is checked in the window, by exact type, calling none of its methods ------
class _Spy(list):  # type: ignore[type-arg]
    calls: list[str] = []

    def __len__(self) -> int:
        _Spy.calls.append("__len__")
        return 1

    def __iter__(self):  # type: ignore[no-untyped-def]
        _Spy.calls.append("__iter__")
        return iter([])


def test_accept_result_takes_exact_tensors_and_calls_nothing_else() -> None:
    t = torch.zeros(2)
    assert accept_result(t).tensors == [t] and accept_result(t).single
    assert accept_result((t, t)).tensors == [t, t] and accept_result([t]).kind == "list"
    assert accept_result(None).tensors == []
    _Spy.calls.clear()
    for bad in (_Spy([t]), (t, 1.0), [t, _Spy()], {"out": t}, "text", t.as_subclass(torch.nn.Parameter)):
        with pytest.raises(SolutionRaised) as caught:
            accept_result(bad)
        assert caught.value.status == "runtime_error"
        assert "run returned" in caught.value.message
    assert _Spy.calls == []  # not one method of the returned objects ran


class _Loud(RuntimeError):
    ran: list[str] = []

    def __str__(self) -> str:
        _Loud.ran.append("__str__")
        return "LEAKED"

    def __repr__(self) -> str:
        _Loud.ran.append("__repr__")
        return "LEAKED"


class _Arg:
    def __repr__(self) -> str:
        _Loud.ran.append("arg __repr__")
        return "LEAKED"


def test_an_exception_is_described_from_builtin_data_only() -> None:
    _Loud.ran.clear()
    try:
        raise _Loud(_Arg(), "plain text", 7)
    except _Loud as exc:
        raised = describe_raised(exc, __file__)
    assert _Loud.ran == []
    assert raised.status == "runtime_error"
    assert raised.message.startswith("_Loud: <_Arg>, plain text, 7") and "LEAKED" not in raised.message


def test_a_long_exception_message_is_cut_not_fatal() -> None:
    try:
        raise ValueError("x" * (4 << 20))
    except ValueError as exc:
        raised = describe_raised(exc, __file__)
    assert len(raised.message) <= MAX_TEXT and raised.message.endswith("[...]")


def test_out_of_memory_is_named_as_such() -> None:
    try:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
    except torch.OutOfMemoryError as exc:
        raised = describe_raised(exc, __file__)
    assert raised.message.startswith("out of memory: OutOfMemoryError")


@pytest.mark.slow
@pytest.mark.parametrize("cheat", ["list_len_computes", "tuple_iter_computes", "list_getitem_computes"])
def test_a_returned_container_subclass_is_refused_in_the_window(cheat: str, tmp_path: Path, tiny_tasks: Path) -> None:
    report = evaluate_cheat(cheat, tmp_path, tiny_tasks)
    assert report.status == "runtime_error", f"{report.status}: {report.message}"
    assert "run returned a Answer (a subclass of" in report.message, report.message
    assert report.harness_version.endswith("-nopolicy")


@pytest.mark.slow
def test_an_exception_is_never_formatted_by_its_own_methods(tmp_path: Path, tiny_tasks: Path) -> None:
    report = evaluate_cheat("exception_repr_computes", tmp_path, tiny_tasks)
    assert report.status == "runtime_error", f"{report.status}: {report.message}"
    assert "Boom: <Payload>, plain text" in report.message and "LEAKED" not in report.message


@pytest.mark.slow
def test_a_finaliser_runs_in_the_window_where_the_guard_sees_it(tmp_path: Path, tiny_tasks: Path) -> None:
    """Automatic collection is off in the solution process; each call ends with a collection inside its
    window, so a generator's finally freed from a cycle computes under the op recorder, not after it."""
    report = evaluate_cheat("gc_finaliser_after_window", tmp_path, tiny_tasks)
    assert report.status == "policy_violation", f"{report.status}: {report.message}"
    assert "torch_compute" in {v.rule for v in report.violations}, report.violations


# -- class 2: every route from tensor values to Python values is a host read ----------------------------
def _guarded(fn: object) -> tuple[object, list[str]]:
    guard = Guard(Path(__file__), snapshot())
    try:
        result, record = guard.call(fn, require_launch=False)  # type: ignore[arg-type]
    except SolutionRaised as raised:
        return raised.status, [raised.message]
    return result, [v.rule for v in record.violations]


@pytest.mark.parametrize(
    "read",
    [
        lambda t: f"{t}",
        repr,
        str,
        lambda t: format(t, ""),
        lambda t: "%s" % (t,),  # noqa: UP031
        lambda t: t.tolist(),
        lambda t: t.numpy(),
        lambda t: t.untyped_storage(),
        lambda t: t.__reduce_ex__(2),
        lambda t: t.__array__(),
    ],
)
def test_each_host_read_route_is_refused_and_recorded(read: object) -> None:
    t = torch.arange(6, dtype=torch.int32)

    def swallowed() -> str:
        try:
            read(t)  # type: ignore[operator]
        except HostReadRefused:
            return "refused"
        return "read"

    result, rules = _guarded(swallowed)
    assert result == "refused" and "host_read" in rules


def test_the_funnel_is_gone_after_the_call() -> None:
    t = torch.arange(3)
    _guarded(lambda: None)
    assert t.tolist() == [0, 1, 2] and "tensor" in repr(t)  # the harness's own reads after the window work
    assert snapshot() == snapshot()


def test_a_refused_read_that_raises_is_a_policy_violation() -> None:
    t = torch.arange(6, dtype=torch.int32)
    status, messages = _guarded(lambda: f"{t.view(torch.int16)}")
    assert status == "policy_violation" and "host_read" in messages[0]


@pytest.mark.slow
@pytest.mark.parametrize("cheat", ["fstring_int_view", "host_read_routes"])
def test_tensor_values_formatted_or_read_in_run_are_refused(cheat: str, tmp_path: Path, tiny_tasks: Path) -> None:
    report = evaluate_cheat(cheat, tmp_path, tiny_tasks)
    assert report.status == "policy_violation", f"{report.status}: {report.message}"
    assert "host_read" in {v.rule for v in report.violations}, report.violations


# -- honest controls: a tuple and a list of tensors are accepted ---------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("wrap", ["tuple", "list"])
def test_a_tuple_or_a_list_of_tensors_is_accepted(wrap: str, tmp_path: Path) -> None:
    task = Catalog(REPO / "tasks", REPO / "guidance").task("rmsnorm_bwd")
    core = RMSNORM_NAIVE.replace("\ndef run(", "\ndef honest_run(")
    path = tmp_path / f"returns_{wrap}.py"
    body = f"\n\ndef run(dY, X, W, rstd):\n    dx, dw = honest_run(dY, X, W, rstd)\n    return {wrap}((dx, dw))\n"
    path.write_text(core + body)
    report = evaluate(task, path, "cpu", ["smoke_m64_n256"])
    assert report.status == "passed", f"{report.status}: {report.message}"
    assert report.violations == []


# -- class 5: every report carries the harness version --------------------------------------------------
@pytest.mark.slow
def test_a_report_refused_by_the_source_check_names_its_harness(tmp_path: Path, tiny_tasks: Path) -> None:
    report = evaluate_cheat("list_len_computes", tmp_path, tiny_tasks, static_policy=True)
    assert report.status == "policy_violation", f"{report.status}: {report.message}"
    assert report.harness_version.startswith("h-") and not report.harness_version.endswith("-nopolicy")


# -- GPU: the padded window (class 1 on a GPU), rejected without a wall clock --------------------------------
gpu = pytest.mark.skipif(resolve_device("auto") != "cuda", reason="needs a CUDA GPU")


@gpu
@pytest.mark.gpu
def test_gpu_padded_window_is_refused(tmp_path: Path) -> None:
    """Class 1 on a GPU: a padding launch in the window, the answer computed after it (list subclass)."""
    task = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize")
    first = task.spec.workloads[0].name
    cheat = build("gpu_padded_window_len", tmp_path, folder="round4_cheats")
    report = evaluate(task, cheat, "cuda", [first], static_policy=False)
    assert report.status == "runtime_error", f"{report.status}: {report.message}"


@gpu
@pytest.mark.gpu
def test_gpu_side_stream_work_past_the_window_gains_no_time(tmp_path: Path) -> None:
    """The real work on a side stream, the guard's launch hook blinded: where the work lands past the end
    event in more than 5% of the timed calls, hidden_device_work refuses it; where the device ran it inside
    the window anyway (the side stream's kernels fill the device and the main stream's padding waits behind
    them), the solution may pass, but at no better than the honest time (the median, within the 10% a call
    may leave behind before it counts)."""
    task = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize")
    first = task.spec.workloads[0].name
    honest = evaluate(task, REPO / "tests" / "solutions" / "muon_naive.py", "cuda", [first])
    assert honest.status == "passed", honest.message
    cheat = build("gpu_side_stream_after_window", tmp_path, folder="round4_cheats")
    report = evaluate(task, cheat, "cuda", [first], static_policy=False)
    if report.status == "policy_violation":
        assert {v.rule for v in report.violations} & {"hidden_device_work", "streams", "torch_compute"}, report.violations
        return
    assert report.status == "passed", f"{report.status}: {report.message}"
    honest_ms, cheat_ms = honest.workloads[0].latency_ms, report.workloads[0].latency_ms
    assert honest_ms is not None and cheat_ms is not None
    assert cheat_ms >= 0.9 * honest_ms, f"the side stream hid work: {cheat_ms:.3f} ms against the honest {honest_ms:.3f} ms"
