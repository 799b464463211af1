"""List inputs (`kind = "tensor_list"`): an optimiser's parameters as a Python list of tensors, each its own
allocation, updated in place. The toy task in tests/fixtures/list_sgd_toy is a momentum-SGD step over a list;
tests/fixtures/list_sgd_solution.py solves it, and one marked line of it makes each wrong variant."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
import torch
from pooled_evaluate import evaluate

from workbench.catalog import CatalogError
from workbench.catalog.loader import load_task
from workbench.harness.solution.host import separate
from workbench.harness.solution.transport import digest_many, pack, split

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SOLUTION = FIXTURES / "list_sgd_solution.py"


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    dest = tmp_path / "tasks" / "list_sgd_toy"
    shutil.copytree(FIXTURES / "list_sgd_toy", dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def variant(tmp_path: Path, old: str, new: str) -> Path:
    text = SOLUTION.read_text()
    assert old in text
    path = tmp_path / f"{old.split(maxsplit=1)[0].lower()}.py"
    path.write_text(text.replace(old, new))
    return path


def test_a_list_is_moved_and_compared_element_by_element(toy: Path) -> None:
    task = load_task(toy)
    workload = task.workload("smoke_nt5")
    assert task.list_lengths(workload) == {"params": 5, "grads": 5, "momentum": 5}
    assert task.tensor_names(workload, state_only=True) == [f"params.{i}" for i in range(5)] + [f"momentum.{i}" for i in range(5)]
    assert task.spec.signature.outputs == []  # the state lists carry the whole result


def test_a_signature_without_outputs_needs_a_state_input(toy: Path) -> None:
    toml = toy / "task.toml"
    toml.write_text(toml.read_text().replace("state = true\n", ""))
    with pytest.raises(CatalogError, match="needs an output, or a state input"):
        load_task(toy)


def test_a_list_size_must_be_an_axis_expression(toy: Path) -> None:
    toml = toy / "task.toml"
    toml.write_text(toml.read_text().replace('count = "NT"', 'count = "NT +"', 1))
    with pytest.raises(CatalogError, match="bad list size expression"):
        load_task(toy)


def test_packing_round_trips_and_refuses_shapes_that_do_not_fill_it() -> None:
    parts = [torch.randn(3, 4), torch.randn(5), torch.randn(1)]
    packed = pack(parts)
    back = split(packed, [list(p.shape) for p in parts])
    assert all(torch.equal(a, b) for a, b in zip(parts, back, strict=True))
    with pytest.raises(ValueError, match="does not hold"):
        split(packed, [[3, 4], [5]])
    with pytest.raises(ValueError, match="bad element shape"):
        split(packed, [[3, -4], [5], [1]])
    assert digest_many(parts) != digest_many([parts[1], parts[0], parts[2]])  # the order counts


def test_the_solution_process_never_gets_a_list_as_one_buffer() -> None:
    """Each element its own allocation with a gap after it: a kernel treating the list as flat reads the gaps."""
    spacers: list[torch.Tensor] = []
    parts = separate([torch.randn(64), torch.randn(128), torch.randn(2, 32)], torch.device("cpu"), spacers)
    assert len(spacers) == 3
    for a, b in itertools.pairwise(parts):
        assert b.data_ptr() != a.data_ptr() + a.numel() * a.element_size()


@pytest.mark.slow  # five evaluations of a toy task under the interpreter (~20 s on a 2-core CPU)
def test_the_harness_checks_every_element_of_a_state_list(toy: Path, tmp_path: Path) -> None:
    task = load_task(toy)
    for seeded in (False, True):  # inputs sent from the checker, and made in the solution process
        honest = evaluate(task, SOLUTION, "cpu", seeded_inputs=seeded)
        assert honest.status == "passed", honest.message
    # the last tensor left alone: its state differs, named by its element
    skip = evaluate(task, variant(tmp_path, "SKIP_LAST = False", "SKIP_LAST = True"), "cpu")
    assert skip.status == "state_mismatch" and "momentum.4" in skip.message
    # a new tensor swapped into the list the call got: the slot's own element is the one compared
    replace = evaluate(task, variant(tmp_path, "REPLACE_FIRST = False", "REPLACE_FIRST = True"), "cpu", seeded_inputs=True)
    assert replace.status == "state_mismatch" and "params.0" in replace.message
    # the list as one flat buffer from its first element: out of bounds (the interpreter), wrong values (GPU)
    flat = evaluate(task, variant(tmp_path, "FLAT = False", "FLAT = True"), "cpu")
    assert flat.status != "passed"


@pytest.mark.slow  # one evaluation (~4 s)
def test_inputs_that_do_not_match_the_declared_list_are_the_tasks_fault(toy: Path) -> None:
    inputs = toy / "inputs.py"
    inputs.write_text(inputs.read_text().replace('"grads": make(0.1)', '"grads": make(0.1)[:-1]'))
    report = evaluate(load_task(toy), SOLUTION, "cpu")
    assert report.status != "passed"
    assert "grads as 4 tensors" in report.message and "declares 5" in report.message
