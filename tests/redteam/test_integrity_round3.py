"""Integrity, round three: classes found by an attacker on the harness of round two, one test per class.

Each cheat in round3_cheats/ is appended to the honest naive Muon solution like the cheats of
test_redteam.py. Where a class needs a route past the static policy (the policy is what stops it
first), the case runs with the static policy off, to show that the layer it targets holds on its own.
GPU-only classes (timing) have their cases at the end, skipped cleanly without a GPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pooled_evaluate import evaluate

from tests.redteam.test_redteam import build
from workbench.catalog import Catalog
from workbench.device import resolve_device
from workbench.harness.checker import host_times
from workbench.harness.checker.crosscheck import NullCalibration, cross_check
from workbench.harness.checker.host_times import HostDelta
from workbench.harness.checker.process import TIMED_TRIALS, TimedCallSampler
from workbench.harness.checker.remote import CallReply
from workbench.harness.protocol.replies import CallReplyModel, ErrorReply, ProtocolViolation, cut_message, parse
from workbench.harness.protocol.report import EvalReport

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def evaluate_cheat(cheat: str, tmp_path: Path, tasks_root: Path, *, static_policy: bool = True) -> EvalReport:
    task = Catalog(tasks_root, REPO / "guidance").task("muon_orthogonalize")
    path = build(cheat, tmp_path, folder="round3_cheats")
    return evaluate(task, path, "cpu", static_policy=static_policy)


# -- finding 6: ill-typed replies are the solution's protocol violation, never the workbench's bug ---------
GOOD_CALL = {
    "ok": True,
    "ms": 1.0,
    "host_ms": 2.0,
    "launch_ms": 0.5,
    "launches": 3,
    "launch_counts": {"k": 3},
    "violations": [],
    "outputs": [{"kind": "tensor", "shape": [2, 3], "dtype": "float16", "device": "cpu", "contiguous": True, "aliases": []}],
    "mutated": [],
}


def test_a_well_formed_call_reply_is_accepted() -> None:
    reply = parse(CallReplyModel, GOOD_CALL)
    assert reply.outputs[0].shape == [2, 3]
    assert reply.launches == 3


@pytest.mark.parametrize(
    "change",
    [
        {"outputs": [{**GOOD_CALL["outputs"][0], "shape": 5}]},  # type: ignore[index]
        {"outputs": [{**GOOD_CALL["outputs"][0], "aliases": {"G": 1}}]},  # type: ignore[index]
        {"outputs": [{**GOOD_CALL["outputs"][0], "shape": ["2", "3"]}]},  # type: ignore[index]
        {"outputs": [{"kind": "tensor"}]},  # a tensor without its description
        {"ms": float("nan")},
        {"ms": -1.0},
        {"ms": "0.001"},
        {"launches": 1.5},
        {"launches": True},
        {"violations": {"rule": "x"}},
        {"extra": 1},
        # the launch record the judge is shown: bounded names, counts of at least 1
        {"launch_counts": {f"kernel_{i}": 1 for i in range(65)}},
        {"launch_counts": {"k" * 201: 1}},
        {"launch_counts": {"k": 0}},
        {"launch_counts": {"k": "3"}},
        {"launch_counts": ["k"]},
    ],
)
def test_an_ill_typed_reply_is_a_protocol_violation(change: dict[str, object]) -> None:
    with pytest.raises(ProtocolViolation) as caught:
        parse(CallReplyModel, {**GOOD_CALL, **change})
    assert "CallReplyModel" in str(caught.value)


def test_an_error_reply_with_a_bad_status_type_is_a_protocol_violation() -> None:
    with pytest.raises(ProtocolViolation):
        parse(ErrorReply, {"ok": False, "status": ["runtime_error"], "message": "x"})


def test_messages_from_the_solution_are_cut_to_a_few_lines() -> None:
    text = "\n".join(f"secret line {i}" for i in range(50))
    cut = cut_message(text)
    assert cut.count("\n") <= 3 and cut.endswith("[...]")
    assert "secret line 10" not in cut
    assert len(cut_message("x" * 10_000)) < 500


@pytest.mark.slow
def test_ill_typed_replies_fail_the_solution_not_the_workbench(tmp_path: Path, tiny_tasks: Path) -> None:
    # end to end once; NaN, negative or string latencies and float counts take the same route (the same
    # parse of every reply) and are the unit cases above
    report = evaluate_cheat("ill_typed_reply", tmp_path, tiny_tasks, static_policy=False)
    assert report.status == "protocol_violation", f"{report.status}: {report.message}"
    assert "broke the protocol" in report.message
    assert all(w.status != "passed" for w in report.workloads), report.workloads


# -- findings 2 and 3 and 9 (host load): the cross-check's arithmetic and what feeds it ------------------
def test_null_calibration_interpolates_between_covers() -> None:
    null = NullCalibration(low_cover_ms=2.0, low_ms=2.5, high_cover_ms=10.0, high_ms=10.5)
    assert null.at(2.0) == 2.5 and null.at(10.0) == 10.5
    assert null.at(6.0) == pytest.approx(6.5)
    assert null.at(50.0) == 10.5  # clamped: a cover is never longer than the largest


def test_a_forged_time_gives_way_to_the_checker_figure_when_the_process_slept() -> None:
    # Round four: the wall clock decides no verdict (load moves it); a figure it cannot explain is replaced
    # by the checker's own, so a forged time gains nothing (process.py uses per_call_ms as the latency).
    walls = [3.0 + 10.0] * 20  # null 3 ms at this cover, 10 ms of device work each
    idle = [HostDelta(cpu_ms=0.2, load_wait_ms=0.0)] * 20
    assert cross_check(10.0, walls, 3.0, idle, 2.0).verdict == "ok"
    forged = cross_check(10.0 / 3, walls, 3.0, idle, 2.0)
    assert forged.verdict == "unexplained" and forged.per_call_ms == [10.0] * 20
    assert "the latency is the checker's figure" in forged.note(10.0 / 3)


def test_the_harness_own_overhead_is_not_charged() -> None:
    # On the H200 an honest call's outside view exceeded its device time by up to 0.5 ms (the harness's own
    # host work and the device's wake-up); the host spent 2-3 ms on the CPU, less than the 4-6 ms cover.
    walls = [5.0 + 0.4 + 0.5] * 20
    honest = [HostDelta(cpu_ms=2.8, load_wait_ms=0.0)] * 20
    assert cross_check(0.4, walls, 5.0, honest, 4.7).verdict == "ok"


def test_cpu_time_inside_the_cover_does_not_make_a_call_host_bound() -> None:
    # A process that burns CPU while hiding device work: its CPU time never exceeded the cover, so the
    # device never waited for the host: unexplained (the checker's figure counts, 3 ms, not the 1 ms claimed).
    walls = [5.0 + 3.0] * 20
    spinning = [HostDelta(cpu_ms=4.0, load_wait_ms=0.0)] * 20
    checked = cross_check(1.0, walls, 5.0, spinning, 4.7)
    assert checked.verdict == "unexplained" and checked.outside_ms == pytest.approx(3.0)


def test_host_load_is_not_hidden_device_work() -> None:
    # Another process held the cores for 6 ms of each call: the round trip grew, the process waited.
    walls = [3.0 + 1.0 + 6.0] * 20
    loaded = [HostDelta(cpu_ms=0.2, load_wait_ms=6.0)] * 20
    checked = cross_check(1.0, walls, 3.0, loaded, 2.0)
    assert checked.verdict == "ok"
    assert checked.outside_ms == pytest.approx(1.0)


def test_a_host_bound_call_is_reported_with_its_host_time() -> None:
    # 6 ms of Python and launches behind a 2 ms cover: the device waited 4 ms for the host, then ran 1 ms
    walls = [3.0 + 4.0 + 1.0] * 20
    busy = [HostDelta(cpu_ms=6.0, load_wait_ms=0.0)] * 20
    checked = cross_check(1.0, walls, 3.0, busy, 2.0)
    assert checked.verdict == "host_bound"
    assert checked.outside_ms == pytest.approx(5.0)  # the figure reported: host time included, no gain


BUSY_OR_IDLE = """
import sys, time
while True:
    line = sys.stdin.readline()
    if line.startswith("spin"):
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
    elif line.startswith("sleep"):
        time.sleep(0.3)
    else:
        break
    print("done", flush=True)
"""


def test_host_times_tell_a_busy_process_from_a_sleeping_one() -> None:
    code = BUSY_OR_IDLE
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pids = host_times.descendants(child.pid)
        measured = {}
        for what in ("spin", "sleep"):
            before = host_times.sample(pids)
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(what + "\n")
            child.stdin.flush()
            child.stdout.readline()
            measured[what] = host_times.delta(before, host_times.sample(pids))
    finally:
        child.kill()
        child.wait()
    if measured["spin"] is None:
        pytest.skip("no /proc schedstat on this machine")
    # The child spins for 300 ms of its own CPU time (not wall time), so a loaded machine cannot shrink it.
    assert measured["spin"].cpu_ms > 250
    assert measured["sleep"] is not None and measured["sleep"].cpu_ms < 100


class _FakeChecker:
    """What TimedCallSampler needs of a WorkloadChecker, recording what it is asked."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, bool]] = []
        self.solution = self
        self.sampled: list[int] = []

    def fresh_inputs(self, trial: int) -> dict[str, int]:
        return {"trial": trial}

    def send(self, slot: int, inputs: dict[str, int], refill: bool = False, timed: bool = False) -> None:
        self.sent.append((slot, inputs["trial"], refill and timed))

    def deliver(self, slot: int, trial: int, inputs: object = None, *, refill: bool = False, timed: bool = False) -> None:
        self.sent.append((slot, trial, refill and timed))  # the trial's values in the slot (sent or made there)

    def call(self, slot: int, **_: object) -> CallReply:
        return CallReply(ms=1.0, wall_ms=2.0, launch_ms=0.1, launches=1, launch_counts={}, violations=[], outputs=[], mutated=[])

    def sample(self, index: int) -> None:
        self.sampled.append(index)


def test_every_timed_call_gets_fresh_values_and_samples_name_their_own_inputs() -> None:
    fake = _FakeChecker()
    sampler = TimedCallSampler(fake, [])  # type: ignore[arg-type]
    call = sampler.timed("events")
    for i in range(50):
        call(i, 2.0)
    trials = [trial for _, trial, _ in fake.sent]
    assert len(set(trials)) == 50, "no two timed calls may share input values"
    assert all(fresh for _, _, fresh in fake.sent), "every timed call's buffers are refilled in place"
    assert len({slot for slot, _, _ in fake.sent}) == 3  # the same three buffers: their addresses repeat
    assert len(sampler.reservoir) == 2 and set(sampler.reservoir) <= set(trials)


def test_timed_and_warm_up_trials_never_repeat_across_measurements() -> None:
    """Events mode, then graph mode (the sampler is reset between): no timed call's inputs are another's,
    and no warm-up call's inputs are a timed call's (a warm-up output recorded cannot answer a timed call)."""
    fake = _FakeChecker()
    sampler = TimedCallSampler(fake, [])  # type: ignore[arg-type]
    for method in ("events", "graph"):
        warm, call = sampler.warm(method), sampler.timed(method)  # type: ignore[arg-type]
        for i in range(40):
            warm(i, 2.0)
        for i in range(30):
            call(i, 2.0)
        sampler.reset()
    trials = [trial for _, trial, _ in fake.sent]
    assert len(set(trials)) == len(trials), "a trial number (an input seed) was used twice"


# -- GPU: the timing classes end to end (pytest tests/redteam -k gpu) ----------------------------------------
gpu = pytest.mark.skipif(resolve_device("auto") != "cuda", reason="needs a CUDA GPU")


def _muon() -> tuple[object, str]:
    task = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize")
    return task, task.spec.workloads[0].name


@gpu
@pytest.mark.gpu
def test_gpu_timed_address_cache_is_caught_by_a_sampled_call(tmp_path: Path) -> None:
    task, first = _muon()
    report = evaluate(task, build("timed_address_cache", tmp_path, folder="round3_cheats"), "cuda", [first], static_policy=False)  # type: ignore[arg-type]
    assert report.status == "incorrect_numerical", f"{report.status}: {report.message}"
    trial = re.search(r"\(trial (\d+)\)", report.message)
    assert trial is not None and int(trial.group(1)) > TIMED_TRIALS, report.message  # a timed call, sampled


@gpu
@pytest.mark.gpu
def test_gpu_stale_inputs_in_place_of_made_ones_are_caught_by_a_sampled_call(tmp_path: Path) -> None:
    """Timed calls' inputs are made in the solution process from the checker's seeds: a process that
    skips making them (and answers the old values from a cache) fails the sampled checks."""
    task, first = _muon()
    cheat = build("stale_generated_inputs", tmp_path, folder="round3_cheats")
    report = evaluate(task, cheat, "cuda", [first], static_policy=False)  # type: ignore[arg-type]
    assert report.status == "incorrect_numerical", f"{report.status}: {report.message}"
    trial = re.search(r"\(trial (\d+)\)", report.message)
    assert trial is not None and int(trial.group(1)) > TIMED_TRIALS, report.message


@gpu
@pytest.mark.gpu
def test_gpu_padded_null_calls_do_not_hide_a_forged_time(tmp_path: Path) -> None:
    """Round four: the forged third of the device time is replaced by the checker's own figure (no verdict
    from the wall clock, which load moves): the forged latency gains nothing over the honest one."""
    task, first = _muon()
    honest = evaluate(task, REPO / "tests" / "solutions" / "muon_naive.py", "cuda", [first])  # type: ignore[arg-type]
    report = evaluate(task, build("padded_null_calls", tmp_path, folder="round3_cheats"), "cuda", [first], static_policy=False)  # type: ignore[arg-type]
    assert honest.passed, honest.message
    if report.status == "passed":
        forged, real = report.workloads[0].latency_ms, honest.workloads[0].latency_ms
        assert forged is not None and real is not None and forged > 0.8 * real, (forged, real)
        assert "the latency is the checker's figure" in report.workloads[0].timing_note
    else:
        assert report.status == "policy_violation", f"{report.status}: {report.message}"


@gpu
@pytest.mark.gpu
def test_gpu_device_work_left_behind_does_not_slow_the_reference(tmp_path: Path) -> None:
    task, first = _muon()
    honest = evaluate(task, REPO / "tests" / "solutions" / "muon_naive.py", "cuda", [first])  # type: ignore[arg-type]
    cheat = evaluate(task, build("leftover_device_work", tmp_path, folder="round3_cheats"), "cuda", [first], static_policy=False)  # type: ignore[arg-type]
    assert honest.passed and cheat.passed, (honest.message, cheat.message)
    mine, theirs = cheat.workloads[0], honest.workloads[0]
    assert mine.reference_alone, mine.timing_note
    assert mine.reference_ms is not None and theirs.reference_ms is not None
    assert mine.reference_ms < 1.1 * theirs.reference_ms, (mine.reference_ms, theirs.reference_ms)


@gpu
@pytest.mark.gpu
def test_gpu_host_load_does_not_fail_an_honest_autotuned_solution(tmp_path: Path) -> None:
    """Finding 9: an honest autotuned solution got timing_mismatch while other evaluations shared the host.
    Here every core but one is kept busy by other processes during the whole evaluation."""
    task, first = _muon()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(1, (os.cpu_count() or 2) - 1))]
    try:
        report = evaluate(task, build("autotune", tmp_path, folder="honest"), "cuda", [first])  # type: ignore[arg-type]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert report.status == "passed", f"{report.status}: {report.message}"


# -- interpreter memory: a kernel's pointers outside its tensors (CPU) ---------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("cheat", ["interpreter_raw_memory", "interpreter_pointer_arithmetic"])
def test_interpreter_memory_outside_the_tensors_is_refused(cheat: str, tmp_path: Path, tiny_tasks: Path) -> None:
    """Under the interpreter a kernel's pointers are host addresses: these kernels read and wrote Python
    objects of the solution's process (a cast of id(obj), or an offset from a tensor's pointer) and ended
    `passed`. Every access is now checked against the launch's tensors (interpreter_bounds)."""
    report = evaluate_cheat(cheat, tmp_path, tiny_tasks)
    # runtime_error for a launch inside run(); these launch while the solution is imported, and the import
    # step reports every failure there as compile_error
    assert report.status in ("runtime_error", "compile_error"), f"{report.status}: {report.message}"
    assert "out-of-bounds memory access in kernel _poke" in report.message, report.message
    assert "address not inside any tensor argument" in report.message, report.message


# -- static policy, round three: escapes refused by class, before anything runs (no evaluation) ----------
ROUND3_STATIC_ESCAPES = {
    "match_abc_register": "tensor_subclass",  # an ABC base (typing.Hashable); positional class patterns
    "typing_type_metaclass": "tensor_subclass",  # typing.Type subclasses type: a metaclass
    "format_dunder_strings": "introspection",  # format fields that walk attributes, dunder names in strings
    "inline_asm_timer": "foreign_kernels",  # PTX in a Triton kernel (%globaltimer)
}


@pytest.mark.parametrize("cheat", sorted(ROUND3_STATIC_ESCAPES))
def test_policy_refuses_round3_static_escapes(cheat: str, tmp_path: Path) -> None:
    from workbench.harness.policy import checker as policy_checker

    path = build(cheat, tmp_path, folder="round3_cheats")
    violations = policy_checker.check_source(path.read_text(), str(path))
    assert ROUND3_STATIC_ESCAPES[cheat] in {v.rule for v in violations}, violations


def test_the_note_sets_what_the_process_says_it_served_beside_the_round_trip() -> None:
    """Where the checker's figure counts, the note carries the process's own request-to-reply times of the timed calls
    and of the null calls (what it says decides nothing: the verdict is the same without them)."""
    walls = [12.0, 12.1, 11.9]
    idle = [HostDelta(cpu_ms=0.1, load_wait_ms=0.0)] * 3
    with_served = cross_check(1.0, walls, 3.0, idle, 2.0, served=([9.2, 9.4, 9.3], 3.1))
    without = cross_check(1.0, walls, 3.0, idle, 2.0)
    assert with_served.verdict == without.verdict == "unexplained"
    assert "served a call in 9.3 ms from request to reply, a null call in 3.1 ms" in with_served.note(1.0)
    assert "served" not in without.note(1.0)
