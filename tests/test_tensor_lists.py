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
from workbench.catalog.describe import signature_table
from workbench.catalog.loader import load_task
from workbench.catalog.task import TensorListArg
from workbench.harness.solution import host
from workbench.harness.solution.host import PackedCopy, _same_bits, separate
from workbench.harness.solution.transport import digest, digest_each, digest_many, pack, split

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


def test_a_lists_digests_are_each_elements_own() -> None:
    """digest_each (small elements digested together) gives each element the digest it has alone."""
    g = torch.Generator().manual_seed(3)
    sizes, dtypes = [1, 2, 3, 4, 7, 64, 1000, 0], [torch.float32, torch.bfloat16, torch.uint8, torch.int64]
    parts = [(1e6 * torch.randn(sizes[i % 8], generator=g)).to(dtypes[i % 4]) for i in range(64)]
    parts.append(torch.randint(-(2**62), 2**62, (1000,), dtype=torch.int64, generator=g))  # products that wrap
    assert digest_each(parts) == [digest(p) for p in parts]


@pytest.mark.parametrize("run_values", [1 << 24, 64, 1])
def test_a_lists_packed_copy_sees_any_change_of_any_element(run_values: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The solution process keeps one packed copy of a list to find inputs a call changed: a flipped bit in
    any element, a resized element or a list of another length all differ from it (compared in runs of any size)."""
    monkeypatch.setattr(host, "PACKED_RUN_VALUES", run_values)
    parts = [torch.randn(n) for n in (5, 1, 300, 64)] + [torch.randn(2, 3)]
    copy = PackedCopy.of(parts)
    assert _same_bits(parts, copy)
    for index in range(len(parts)):
        changed = [p.clone() for p in parts]
        changed[index].view(-1)[-1] = -changed[index].view(-1)[-1]
        assert not _same_bits(changed, copy)
    assert not _same_bits([*parts[:-1], parts[-1].reshape(3, 2)], copy)
    assert not _same_bits(parts[:-1], copy)
    zero = [torch.tensor([0.0]), torch.tensor([1.0])]
    assert not _same_bits([torch.tensor([-0.0]), torch.tensor([1.0])], PackedCopy.of(zero))  # bits, not values


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


# -- a dtype a workload axis picks (fused_adamw's bfloat16 states), and a workload's own tolerance -------------
def _with_momentum_by_axis(toy: Path, smoke_mb: int = 2) -> None:
    """The toy's momentum list in float32 at MB = 4 and bfloat16 at MB = 2 (smoke_nt5 at `smoke_mb`), with its
    own rule for the bfloat16 workload: against exact() (the reference's bfloat16 arithmetic rounds twice), the
    momentum within a bfloat16 ulp."""
    toml = toy / "task.toml"
    text = toml.read_text()
    text = text.replace(
        'name = "momentum"\ndtype = "float32"\n',
        'name = "momentum"\ndtype = "float32"\ndtype_by = { axis = "MB", dtypes = { 4 = "float32", 2 = "bfloat16" } }\n',
    )
    text = text.replace("axes = { NT = 40, P = 100000 }", "axes = { NT = 40, P = 100000, MB = 4 }")
    text = text.replace("axes = { NT = 9, P = 3001 }", "axes = { NT = 9, P = 3001, MB = 4 }")
    text = text.replace(
        "axes = { NT = 5, P = 1000 }",
        f"axes = {{ NT = 5, P = 1000, MB = {smoke_mb} }}\n\n"
        "[smoke_workloads.tolerance]\noracle = 'exact'\natol = 1e-4\nrtol = 1e-3\n\n"
        "[smoke_workloads.tolerance.outputs.momentum]\natol = 1e-6\nrtol = 8e-3\n",
    )
    toml.write_text(text)


def test_a_workload_axis_picks_a_lists_dtype_and_a_workload_may_carry_its_own_rule(toy: Path) -> None:
    _with_momentum_by_axis(toy)
    task = load_task(toy)
    momentum = next(a for a in task.spec.signature.inputs if a.name == "momentum")
    assert isinstance(momentum, TensorListArg)
    assert task.dtype_of(momentum, task.workload("smoke_nt5")) == "bfloat16"
    assert task.dtype_of(momentum, task.workload("smoke_nt9")) == "float32"
    assert task.tolerance_for(task.workload("smoke_nt5")).rule_for("momentum").rtol == 8e-3
    assert task.tolerance_for(task.workload("smoke_nt5")).rule_for("params").rtol == 1e-3
    assert task.tolerance_for(task.workload("smoke_nt9")).rule_for("momentum").rtol == 1e-5
    assert "float32 | bfloat16 (by MB)" in str(signature_table(task).columns[2]._cells)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("MB = 2 }", "MB = 3 }", "picks no dtype for momentum"),
        (
            'dtypes = { 4 = "float32", 2 = "bfloat16" }',
            'dtypes = { 4 = "float16", 2 = "bfloat16" }',
            "not one of dtype_by's dtypes",
        ),
        ('dtypes = { 4 = "float32", 2 = "bfloat16" }', 'dtypes = { 4 = "float32" }', "at least 2"),
        (
            "[smoke_workloads.tolerance.outputs.momentum]",
            "[smoke_workloads.tolerance.outputs.velocity]",
            "neither outputs nor state",
        ),
        ('axis = "MB"', 'axis = "MBB"', "must give exactly the axes"),
    ],
)
def test_bad_dtype_by_or_workload_rules_are_refused(toy: Path, old: str, new: str, message: str) -> None:
    _with_momentum_by_axis(toy)
    toml = toy / "task.toml"
    assert old in toml.read_text()
    toml.write_text(toml.read_text().replace(old, new))
    with pytest.raises(CatalogError, match=message):
        load_task(toy)


@pytest.mark.slow  # two evaluations of the toy under the interpreter (~8 s on a 2-core CPU)
def test_the_harness_holds_inputs_to_the_dtype_the_workload_picks(toy: Path) -> None:
    """inputs.py must give the list in the dtype the axis picks: float32 momentum where MB = 2 is the task's fault;
    in bfloat16 the toy solution (which stores through the list's own pointers) passes under the workload's rule."""
    _with_momentum_by_axis(toy)
    wrong = evaluate(load_task(toy), SOLUTION, "cpu", workloads=["smoke_nt5"])
    assert wrong.status != "passed" and "not a contiguous bfloat16 tensor" in wrong.message
    inputs = toy / "inputs.py"
    inputs.write_text(
        inputs.read_text().replace(
            '"momentum": make(0.05)', '"momentum": [t.to(torch.bfloat16) if axes.get("MB") == 2 else t for t in make(0.05)]'
        )
    )
    right = evaluate(load_task(toy), SOLUTION, "cpu", workloads=["smoke_nt5"])
    assert right.status == "passed", right.message


def test_a_refill_copies_even_where_the_solution_replaced_torchs_foreach_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard's snapshot covers torch's public names; the refill's multi-tensor copy was taken before any
    solution code ran, so a no-op put in its place cannot leave the previous call's values in the slot."""
    from workbench.harness.solution.host import copy_all

    monkeypatch.setattr(torch, "_foreach_copy_", lambda *args, **kwargs: None)
    buffers = [torch.zeros(3), torch.zeros(5)]
    copy_all(buffers, [torch.ones(3), torch.full((5,), 2.0)])
    assert torch.equal(buffers[0], torch.ones(3)) and torch.equal(buffers[1], torch.full((5,), 2.0))


def test_a_packed_list_is_a_new_copy_of_its_elements_values_in_order() -> None:
    """pack: the elements' values in order, in memory of its own (a lone element too: the solution process's
    copy of a one-element list must not be that element), whatever the elements' layout; never part of a graph."""
    lone = torch.randn(4)
    packed = pack([lone])
    lone[0] = 7.0
    assert packed[0] != 7.0 and packed.data_ptr() != lone.data_ptr()
    weight = torch.randn(3, requires_grad=True)
    parts = [torch.randn(4, 3).t(), torch.tensor(2.0), torch.empty(0, 5), weight, torch.randn(2, 2)[:, 1]]
    packed = pack(parts)
    assert torch.equal(packed, torch.cat([t.detach().reshape(-1) for t in parts]))
    assert not packed.requires_grad
    with pytest.raises(ValueError, match="empty list"):
        pack([])


def test_packing_ignores_a_flatten_the_solution_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """pack's flatten was taken when the module was imported, before any solution code ran: a private torch
    function replaced later (the guard's snapshot covers public names) cannot choose what a packed list holds."""
    monkeypatch.setattr(torch._C._nn, "flatten_dense_tensors", lambda tensors: torch.zeros(5))
    assert torch.equal(pack([torch.ones(2), torch.full((3,), 2.0)]), torch.tensor([1.0, 1.0, 2.0, 2.0, 2.0]))


def test_the_oracles_copies_of_a_list_are_new_allocations_with_the_same_bits_and_layout() -> None:
    """The checker hands the task's oracle copies of a list input (the oracle updates state in place): each
    element a new allocation with the element's strides and bits (NaN payloads and -0 kept)."""
    from workbench.harness.checker.correctness import clone_each

    special = torch.tensor([0x7FC00001, -(2**31), 1], dtype=torch.int32).view(torch.float32)  # a NaN payload, -0.0
    parts = [special, torch.randn(4, 3).t(), torch.empty(0), torch.randn(5).to(torch.bfloat16), torch.tensor(3)]
    copies = clone_each(parts)
    for part, copy in zip(parts, copies, strict=True):
        assert copy.dtype == part.dtype and copy.shape == part.shape and copy.stride() == part.clone().stride()
        assert part.numel() == 0 or copy.data_ptr() != part.data_ptr()
        assert torch.equal(copy.reshape(-1).view(torch.uint8), part.reshape(-1).view(torch.uint8))  # bits, not values
    assert clone_each([]) == []


def test_a_view_at_an_odd_offset_has_the_digest_of_its_own_bytes() -> None:
    """A list element a task hands over as a view into a larger buffer (a bfloat16 element at an odd offset)
    is digested, alone or in a run, as its own copy is, not refused by the harness."""
    from workbench.harness.solution.transport import digest, digest_each

    buffer = torch.randn(41).to(torch.bfloat16)
    view, other = buffer[1:9], buffer[9:41]
    assert view.storage_offset() == 1
    assert digest(view) == digest(view.clone())
    assert digest_each([view, other]) == [digest(view.clone()), digest(other.clone())]
