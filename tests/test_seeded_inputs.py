"""Trials' inputs made in the solution process from the checker's seeds (issue 28): the solution host's
`generate` stores the task's make_inputs values in a slot as `put` would, bit for bit what the checker
makes from the same seed; anything else is refused. End to end (CPU, with the GPU's default switched on):
the checker compares the first made values with its own and falls back to sending where they differ, and a
process that makes other values than asked fails the checks."""

from __future__ import annotations

import gc
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from pooled_evaluate import evaluate

from tests.redteam.test_redteam import build
from workbench.catalog import Catalog
from workbench.catalog.loader import load_task
from workbench.catalog.task import ScalarArg, TensorArg
from workbench.harness.checker.correctness import trial_seed
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution.host import Host
from workbench.harness.solution.transport import Channel, digest, digest_many

REPO = Path(__file__).resolve().parent.parent
TASKS = sorted(p.name for p in (REPO / "tasks").iterdir() if (p / "task.toml").exists())
SOLUTION = REPO / "tests" / "solutions" / "muon_naive.py"


class Checker:
    """The checker's end of a channel to a solution host served in a thread of this process."""

    def __init__(self) -> None:
        self.channel, theirs = Channel.pair()
        self.host = Host(Channel(theirs))
        self.thread = threading.Thread(target=self.host.serve, daemon=True)
        self.thread.start()

    def ask(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[torch.Tensor]]:
        self.channel.send(message, [])
        return self.channel.recv(timeout=60)

    def close(self) -> None:
        self.channel.send({"op": "exit"})
        self.thread.join(timeout=10)


@pytest.fixture
def checker() -> Iterator[Checker]:
    c = Checker()
    yield c
    c.close()
    gc.unfreeze()  # the host's init froze this test process's objects and turned automatic collection off
    gc.enable()


def test_init_freezes_what_exists_before_solution_code_and_leaves_collections_to_the_guard(checker: Checker) -> None:
    """After init nothing but the solution's own objects is left for a collection to walk (the full one
    between workloads runs under the guard and costs microseconds), and no collection runs by itself."""
    Case("rmsnorm_bwd").init(checker)
    assert gc.get_freeze_count() > 1000
    assert not gc.isenabled()


def _digest(value: Any) -> int:
    return digest_many(value) if isinstance(value, list) else digest(value)


def _parts(value: Any) -> list[torch.Tensor]:
    """A tensor input's tensors: itself, or a list's elements."""
    return list(value) if isinstance(value, list) else [value]


class Case:
    """A task's smoke workload, its input names and its make_inputs as the checker imports it."""

    def __init__(self, task_id: str, workload: int = 0) -> None:
        self.task = load_task(REPO / "tasks" / task_id)
        self.make_inputs = import_file(self.task.file("inputs.py"), f"_inputs_{task_id}").make_inputs
        self.workload = self.task.spec.smoke_workloads[workload]
        inputs = self.task.spec.signature.inputs
        self.names = [a.name for a in inputs if not isinstance(a, ScalarArg)]  # tensors and lists of them
        self.scalars = [a.name for a in inputs if isinstance(a, ScalarArg)]

    def init(self, checker: Checker, with_source: bool = True) -> None:
        message: dict[str, Any] = {"op": "init", "solution": str(SOLUTION), "device": "cpu"}
        if with_source:
            message["inputs_source"] = self.task.file("inputs.py").read_text()
        assert checker.ask(message)[0]["ok"] is True

    def generate(self, checker: Checker, seed: int, **extra: Any) -> dict[str, Any]:
        message = {"op": "generate", "slot": 0, "seed": seed, "axes": dict(self.workload.axes), "names": self.names}
        message.update({"scalar_names": self.scalars, "state": [], **extra})
        return checker.ask(message)[0]

    def theirs(self, checker: Checker) -> list[int]:
        """The slot's digests as the process reports them, and checked against its tensors here."""
        reply, _ = checker.ask({"op": "digests", "slot": 0, "names": self.names})
        assert reply["ok"] is True
        assert reply["digests"] == [_digest(checker.host.slots[0][n]) for n in self.names]
        return list(reply["digests"])

    def same(self, theirs: list[int], ours: dict[str, Any]) -> bool:
        return theirs == [_digest(ours[n]) for n in self.names]


@pytest.mark.parametrize("task_id", TASKS)
def test_made_inputs_are_the_checkers_bit_for_bit(checker: Checker, task_id: str) -> None:
    case = Case(task_id)
    case.init(checker)
    seed = trial_seed(1234, case.workload.name, 3)
    assert case.generate(checker, seed)["ok"] is True
    ours = case.make_inputs(case.workload.axes, seed, "cpu")
    assert case.same(case.theirs(checker), ours)
    slot = checker.host.slots[0]
    assert all(torch.equal(a, b) for n in case.names for a, b in zip(_parts(slot[n]), _parts(ours[n]), strict=True))
    assert all(slot[n] == ours[n] for n in case.scalars)  # scalars as make_inputs gave them
    assert all(t.is_contiguous() for n in case.names for t in _parts(slot[n]))  # as `put` stores them
    # and a later seed gives new values, written into the same buffers on refill
    before = [t.data_ptr() for n in case.names for t in _parts(slot[n])]
    assert case.generate(checker, seed + 1, refill=True, timed=True)["ok"] is True
    theirs = case.theirs(checker)
    assert case.same(theirs, case.make_inputs(case.workload.axes, seed + 1, "cpu"))
    assert not case.same(theirs, ours)
    assert [t.data_ptr() for n in case.names for t in _parts(checker.host.slots[0][n])] == before


def test_made_inputs_are_scaled_as_the_checker_scales_them(checker: Checker) -> None:
    case = Case("add_rmsnorm_fp8_quant")
    case.init(checker)
    assert case.generate(checker, 7, scale=1000.0)["ok"] is True
    ours = case.make_inputs(case.workload.axes, 7, "cpu")
    for arg in case.task.spec.signature.inputs:  # the checker's `scaled`: floats of 16 bits or more
        value = ours[arg.name]
        if isinstance(arg, TensorArg) and value.is_floating_point() and value.element_size() >= 2:
            value.mul_(1000.0)
    assert case.same(case.theirs(checker), ours)


def test_an_untimed_slot_keeps_a_pristine_copy_and_a_timed_one_none(checker: Checker) -> None:
    """The input-mutation check compares an untimed call's inputs with a copy taken when they were stored."""
    case = Case("muon_orthogonalize")
    case.init(checker)
    assert case.generate(checker, 5)["ok"] is True
    assert torch.equal(checker.host.pristine[0]["G"], checker.host.slots[0]["G"])
    assert case.generate(checker, 6, refill=True, timed=True)["ok"] is True
    assert 0 not in checker.host.pristine


def test_generate_without_the_tasks_inputs_is_refused(checker: Checker) -> None:
    case = Case("muon_orthogonalize")
    case.init(checker, with_source=False)
    reply = case.generate(checker, 5)
    assert reply["ok"] is False and "before init" in reply["message"]


def test_made_inputs_of_another_shape_than_the_slots_are_refused(checker: Checker) -> None:
    """A refill whose axes make another shape than the slot's buffers (a checker's bug, or a tampered request)."""
    small, large = Case("muon_orthogonalize", 0), Case("muon_orthogonalize", 1)
    small.init(checker)
    assert small.generate(checker, 5)["ok"] is True
    reply = large.generate(checker, 5, refill=True)
    assert reply["ok"] is False and "does not fit" in reply["message"]


def test_a_failing_generator_is_reported_not_raised(checker: Checker) -> None:
    case = Case("muon_orthogonalize")
    case.init(checker)
    message = {"op": "generate", "slot": 0, "seed": 5, "axes": {"B": 1, "M": 9, "N": 3}, "names": ["G"], "scalar_names": []}
    reply = checker.ask(message)[0]
    assert reply["ok"] is False and "making a trial's inputs" in reply["message"]


def test_digest_tells_bits_and_positions_apart() -> None:
    a = torch.tensor([0.0, float("nan"), 1.0, 2.0])
    assert digest(a) == digest(a.clone())
    assert digest(a) != digest(torch.tensor([-0.0, float("nan"), 1.0, 2.0]))  # signed zeros
    assert digest(a) != digest(torch.tensor([0.0, float("nan"), 2.0, 1.0]))  # the same values elsewhere
    assert digest(a) != digest(a[:3])
    odd = torch.arange(7, dtype=torch.uint8)  # a size that is no multiple of 4 bytes
    assert digest(odd) != digest(odd.flip(0))


def test_digest_is_the_same_in_any_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Integer sums modulo 2^64: the figure does not depend on how the work is split (nor on a device's
    reduction order), so both processes get it whatever they run on."""
    t = torch.randn(1000, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    whole = digest(t)
    monkeypatch.setattr("workbench.harness.solution.transport.DIGEST_CHUNK", 7)
    assert digest(t) == whole


# -- end to end on the CPU (the GPU's default switched on) ---------------------------------------------------
@pytest.mark.slow
def test_an_honest_solution_passes_on_inputs_made_in_its_process(tiny_tasks: Path) -> None:
    task = Catalog(tiny_tasks, REPO / "guidance").task("muon_orthogonalize")
    report = evaluate(task, SOLUTION, "cpu", seeded_inputs=True)
    assert report.status == "passed", report.message
    assert all(w.inputs_made_there for w in report.workloads)


@pytest.mark.slow
def test_a_generator_not_deterministic_across_processes_falls_back_to_sending(tmp_path: Path, tiny_tasks: Path) -> None:
    """Honest solutions never pay for a task whose make_inputs differs between processes: the first made
    values differ from the checker's, and the workload's inputs are sent instead."""
    root = tmp_path / "tasks"
    shutil.copytree(tiny_tasks, root)
    inputs = root / "muon_orthogonalize" / "inputs.py"
    end = '    return {"G": G.to(torch.bfloat16).contiguous(), "steps": STEPS}'
    # exact values of opposite signs: an increment could round to one bfloat16 at the matrices' scale (up to 1e3)
    differs = '    G[0, 0, 0] = 1.0 if "workbench.harness.checker.process" in __import__("sys").modules else -1.0\n'
    text = inputs.read_text().replace(end, differs + end)  # one value the checker's process makes otherwise
    assert text != inputs.read_text()
    inputs.write_text(text)
    task = Catalog(root, REPO / "guidance").task("muon_orthogonalize")
    report = evaluate(task, SOLUTION, "cpu", seeded_inputs=True)
    assert report.status == "passed", report.message
    assert not any(w.inputs_made_there for w in report.workloads)


@pytest.mark.slow
def test_a_process_that_makes_other_inputs_than_asked_fails(tmp_path: Path, tiny_tasks: Path) -> None:
    """Past the static policy, the solution swaps the host's `generate` for one that leaves the slot's old
    values in place after the first (compared) delivery, and answers those: the checks, made against the
    checker's own inputs of each trial, fail."""
    task = Catalog(tiny_tasks, REPO / "guidance").task("muon_orthogonalize")
    cheat = build("stale_generated_inputs", tmp_path, folder="round3_cheats")
    text = cheat.read_text().replace("_ONLY_TIMED = True", "_ONLY_TIMED = False")
    cheat.write_text(text)
    report = evaluate(task, cheat, "cpu", seeded_inputs=True, static_policy=False)
    assert report.status == "incorrect_numerical", f"{report.status}: {report.message}"
