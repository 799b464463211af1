"""Loading tasks and guidance: the bundled Muon task, and every way a file can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog import Catalog, CatalogError, parse_config, render
from workbench.catalog.loader import load_guidance, load_rubric, load_task
from workbench.errors import UsageError


def test_muon_task_loads_with_its_workloads(repo: Path) -> None:
    task = Catalog(repo / "tasks", repo / "guidance").task("muon_orthogonalize")
    assert [w.axes for w in task.spec.workloads] == [
        {"B": 32, "M": 2048, "N": 5464},
        {"B": 32, "M": 4096, "N": 11008},
        {"B": 8, "M": 7168, "N": 18432},
    ]
    assert len(task.spec.smoke_workloads) == 2
    assert task.spec.tolerance.oracle == "exact"
    w = task.spec.workloads[0]
    assert task.flops(w) == 5 * 32 * (4 * 2048 * 2048 * 5464 + 2 * 2048**3)
    assert task.bytes_moved(w) == 4 * 32 * 2048 * 5464
    assert task.shape(task.spec.signature.outputs[0].shape, w) == (32, 2048, 5464)


def test_muon_guidance_and_rubric_are_consistent(repo: Path) -> None:
    cat = Catalog(repo / "tasks", repo / "guidance")
    guidance = cat.guidance("muon_orthogonalize")
    rubric = cat.rubric("muon_orthogonalize")
    assert guidance is not None and rubric is not None
    assert {i.level for i in guidance.items} == {"L1", "L2", "L3"}
    for level in ("L1", "L2", "L3"):
        assert rubric.for_level(level), f"rubric has no {level} criteria"


def _rewrite(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _error(task_dir: Path) -> str:
    with pytest.raises(CatalogError) as info:
        load_task(task_dir)
    return str(info.value)


def test_missing_field_names_file_and_field(task_copy: Path) -> None:
    _rewrite(task_copy / "task.toml", 'category = "optimizer"\n', "")
    message = _error(task_copy)
    assert str(task_copy / "task.toml") in message
    assert "category" in message and "Field required" in message


def test_wrong_type_says_what_was_expected(task_copy: Path) -> None:
    _rewrite(task_copy / "task.toml", "B = 32, M = 2048", 'B = "many", M = 2048')
    message = _error(task_copy)
    assert "workloads[0].axes.B" in message
    assert "valid integer" in message and "'many'" in message


def test_bad_shape_expression(task_copy: Path) -> None:
    _rewrite(task_copy / "task.toml", 'shape = ["B", "M", "N"]', 'shape = ["B", "M +", "N"]')
    message = _error(task_copy)
    assert "signature.inputs[0].shape" in message and "bad shape expression" in message


def test_shape_expression_cannot_run_code(task_copy: Path) -> None:
    _rewrite(task_copy / "task.toml", 'shape = ["B", "M", "N"]', 'shape = ["B", "__import__(\'os\')", "N"]')
    assert "unsupported syntax" in _error(task_copy)


def test_unknown_axis_in_formula(task_copy: Path) -> None:
    _rewrite(task_copy / "task.toml", 'bytes = "B*M*N*2', 'bytes = "B*M*K*2')
    assert "names axes ['K'] that no shape uses" in _error(task_copy)


def test_workload_breaking_a_constraint(task_copy: Path) -> None:
    _rewrite(task_copy / "task.toml", "B = 8, M = 64, N = 200", "B = 8, M = 264, N = 200")
    assert "breaks 'M <= N'" in _error(task_copy)


def test_workload_missing_an_axis(task_copy: Path) -> None:
    _rewrite(task_copy / "task.toml", "B = 8, M = 64, N = 200", "B = 8, M = 64")
    assert "missing ['N']" in _error(task_copy)


def test_invalid_toml(task_copy: Path) -> None:
    (task_copy / "task.toml").write_text("id = \n")
    assert "not valid TOML" in _error(task_copy)


def test_unknown_field_is_rejected(task_copy: Path) -> None:
    _rewrite(task_copy / "task.toml", "[timing]\n", "[timing]\nmdoe = 'graph'\n")
    assert "timing.mdoe" in _error(task_copy)


def test_missing_task_file(task_copy: Path) -> None:
    (task_copy / "reference.py").unlink()
    assert "reference.py: file not found" in _error(task_copy)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("    return G\n", "run(...) must only raise NotImplementedError"),
        ("    x = 1\n    raise NotImplementedError\n", "run(...) must only raise NotImplementedError"),
        ("    raise ValueError('not yet')\n", "run(...) must only raise NotImplementedError"),
        ("    raise NotImplementedError(\n", "not valid Python"),
    ],
)
def test_a_template_that_does_anything_but_raise_not_implemented_is_refused(task_copy: Path, body: str, message: str) -> None:
    """The runner never evaluates the untouched template, so a template must not be a working kernel."""
    (task_copy / "template.py").write_text(f'import torch\n\n\ndef run(G, steps):\n    """Doc."""\n{body}')
    error = _error(task_copy)
    assert "template.py" in error and message in error, error


def test_a_template_without_run_is_refused(task_copy: Path) -> None:
    (task_copy / "template.py").write_text("def main():\n    raise NotImplementedError\n")
    assert "template.py: defines no run(...) function" in _error(task_copy)


def test_unknown_task_lists_known_ones(repo: Path) -> None:
    with pytest.raises(CatalogError, match=r"known tasks: .*muon_orthogonalize.*rmsnorm_bwd"):
        Catalog(repo / "tasks", repo / "guidance").task("nope")


GUIDANCE = """
task = "t"
[[items]]
id = "L1.a"
level = "L1"
title = "A"
text = "alpha"
depends_on = {a_deps}
[[items]]
id = "L2.b"
level = "L2"
title = "B"
text = "beta"
depends_on = {b_deps}
"""


def _guidance(tmp_path: Path, a_deps: str = "[]", b_deps: str = '["L1.a"]') -> Path:
    folder = tmp_path / "g"
    folder.mkdir(exist_ok=True)
    (folder / "guidance.toml").write_text(GUIDANCE.format(a_deps=a_deps, b_deps=b_deps))
    return folder


def test_guidance_unknown_dependency(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"item 'L2\.b' depends on unknown item 'L1\.zzz'"):
        load_guidance(_guidance(tmp_path, b_deps='["L1.zzz"]'))


def test_guidance_cycle(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"dependency cycle: L1.a -> L2.b -> L1.a"):
        load_guidance(_guidance(tmp_path, a_deps='["L2.b"]'))


def test_guidance_level_prefix(tmp_path: Path) -> None:
    folder = _guidance(tmp_path)
    _rewrite(folder / "guidance.toml", 'id = "L2.b"', 'id = "L3.b"')
    with pytest.raises(CatalogError, match="must start with its level 'L2'"):
        load_guidance(folder)


def test_rubric_unknown_guidance_item(tmp_path: Path) -> None:
    folder = _guidance(tmp_path)
    (folder / "rubric.toml").write_text(
        'task = "t"\n[[criteria]]\nid = "c"\nlevel = "L1"\nguidance = ["L1.nope"]\nproperty = "p"\n'
        'cost_removed = "c"\npartial = "p"\nexpert_evidence = "e"\n'
    )
    with pytest.raises(CatalogError, match=r"criteria\[0\].guidance: names unknown guidance item 'L1.nope'"):
        load_rubric(folder, load_guidance(folder))


def test_render_is_cumulative(tmp_path: Path) -> None:
    guidance = load_guidance(_guidance(tmp_path))
    assert render(guidance, "none") == ""
    l1 = render(guidance, "L1")
    assert "alpha" in l1 and "beta" not in l1
    both = render(guidance, "L1+L2")
    assert "alpha" in both and "beta" in both and "Builds on: L1.a" in both


def test_parse_config() -> None:
    assert parse_config("l1+l2") == "L1+L2"
    with pytest.raises(UsageError, match="expected one of: none, L1, L1\\+L2, L1\\+L2\\+L3"):
        parse_config("L2")


def test_one_malformed_task_does_not_hide_the_others(tmp_path: Path) -> None:
    import shutil

    from workbench import paths

    shutil.copytree(paths.REPO_ROOT / "tasks" / "muon_orthogonalize", tmp_path / "tasks" / "muon_orthogonalize")
    bad = tmp_path / "tasks" / "broken_task"
    bad.mkdir()
    (bad / "task.toml").write_text('id = "broken_task"\ntitle = 3\n')
    entries = Catalog(tmp_path / "tasks", paths.REPO_ROOT / "guidance").entries()
    assert [(e.task_id, e.task is not None, e.problem is None) for e in entries] == [
        ("broken_task", False, False),
        ("muon_orthogonalize", True, True),
    ]
    assert "task.toml" in (entries[0].problem or "")


def test_a_scalar_may_carry_a_workload_axis_but_not_also_a_pinned_value(repo: Path, tmp_path: Path) -> None:
    import shutil

    task = Catalog(repo / "tasks", repo / "guidance").task("windowed_attention")
    window = next(a for a in task.spec.signature.inputs if a.name == "window")
    assert window.kind == "scalar" and window.axis == "W" and "W" in task.spec.signature.axes()
    dest = tmp_path / "windowed_attention"
    shutil.copytree(repo / "tasks" / "windowed_attention", dest, ignore=shutil.ignore_patterns("__pycache__"))
    toml = dest / "task.toml"
    toml.write_text(toml.read_text().replace('axis = "W"', 'axis = "W"\nvalue = 4096'))
    with pytest.raises(CatalogError, match="a pinned value or an axis, not both"):
        load_task(dest)
