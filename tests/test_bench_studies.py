"""`d2k-workbench bench false-failures` and `bench sweep`: the studies each task declares in its folder
(false_failure.toml with false_failure.py, sweep.toml), run end to end on the CPU, and every declaration checked."""

from __future__ import annotations

import ast
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import torch
from typer.testing import CliRunner

from workbench.catalog import Catalog
from workbench.catalog.task import CompareRule, Workload
from workbench.cli import app
from workbench.errors import UsageError
from workbench.harness.studies import declared
from workbench.harness.studies.calls import rule_ratio
from workbench.harness.studies.sweep import candidates

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")
runner = CliRunner()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command as a user runs it (its own process: the interpreter's patches stay there)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, env=env, check=False)


# -- false failures ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_false_failures_run_end_to_end_on_the_cpu() -> None:
    result = cli("bench", "false-failures", "rmsnorm_bwd", "--calls", "2", "--workload", "smoke_m64_n256", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["design"]: row for row in json.loads(result.stdout)}
    assert set(rows) == {"reference", "expert", "naive", "cheat_no_mean_term", "cheat_first_rows", "wrong_dw_in_bf16"}
    for row in rows.values():
        assert row["workload"] == "smoke_m64_n256"
        assert row["fresh"]["calls"] == 2 and row["scaled"]["calls"] == 1  # a scaled call after the first fresh one
        if row["honest"]:  # the expert under the interpreter included: inside the tolerance on every call
            assert row["fresh"]["failing"] == 0 and row["fresh"]["max"] < 1
        else:
            assert row["fresh"]["failing"] == 2 and row["fresh"]["min"] > 1


def test_an_unknown_task_is_a_one_line_usage_error() -> None:
    result = runner.invoke(app, ["bench", "false-failures", "no_such_task", "--calls", "2"])
    assert result.exit_code == 2
    assert "no_such_task" in result.output and len(result.output.strip().splitlines()) == 1


def test_a_task_without_a_study_is_a_one_line_usage_error() -> None:
    result = runner.invoke(app, ["bench", "false-failures", "topk_topp_sampling", "--calls", "2"])
    assert result.exit_code == 2
    assert "declares no false-failure study" in result.output and len(result.output.strip().splitlines()) == 1


def test_an_unknown_workload_names_the_choices() -> None:
    result = runner.invoke(app, ["bench", "false-failures", "rmsnorm_bwd", "--workload", "nope", "--calls", "1"])
    assert result.exit_code == 2
    assert "'nope'" in result.output and "smoke_m64_n256" in result.output


def _task_copy(tmp_path: Path, task_id: str) -> Path:
    root = tmp_path / "tasks"
    shutil.copytree(REPO / "tasks" / task_id, root / task_id, ignore=shutil.ignore_patterns("__pycache__", "expert.py"))
    return root


def test_an_invalid_declaration_names_the_file_and_the_fault(tmp_path: Path) -> None:
    root = _task_copy(tmp_path, "rmsnorm_bwd")
    (root / "rmsnorm_bwd" / "false_failure.toml").write_text(
        'about = "x"\n[[design]]\nname = "reference"\nhonest = true\nreference = "reference"\n'
        '[[design]]\nname = "also"\nhonest = true\nreference = "exact"\n'
    )
    result = runner.invoke(app, ["bench", "false-failures", "rmsnorm_bwd", "--tasks-dir", str(root)])
    assert result.exit_code == 2
    assert "false_failure.toml" in result.output and "one honest and one wrong" in result.output


def test_an_honest_design_that_fails_a_call_exits_1(tmp_path: Path) -> None:
    # the cheat's emulation declared honest: every call it fails is a false failure, and the command says so
    root = _task_copy(tmp_path, "rmsnorm_bwd")
    (root / "rmsnorm_bwd" / "false_failure.toml").write_text(
        'about = "x"\n[[design]]\nname = "reference"\nhonest = true\nreference = "reference"\n'
        '[[design]]\nname = "mislabelled"\nhonest = true\nemulation = "no_mean_term"\n'
        '[[design]]\nname = "wrong"\nhonest = false\nemulation = "first_rows"\n'
    )
    args = ["bench", "false-failures", "rmsnorm_bwd", "--tasks-dir", str(root), "--calls", "1", "--json"]
    result = runner.invoke(app, [*args, "--workload", "smoke_m64_n256"])
    assert result.exit_code == 1, result.output
    rows = {row["design"]: row for row in json.loads(result.stdout[result.stdout.index("[") :])}
    assert rows["mislabelled"]["fresh"]["failing"] == 1 and rows["reference"]["fresh"]["failing"] == 0


def _functions(path: Path) -> set[str]:
    return {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}


def test_every_declared_study_names_code_and_workloads_that_exist() -> None:
    studied = [t for t in CATALOG.tasks() if t.file(declared.FALSE_FAILURE_FILE).is_file()]
    assert len(studied) >= 23  # every task whose tolerance a false-failure study backs
    for task in studied:
        spec = declared.false_failures(task)
        reference = _functions(task.file("reference.py"))
        emulations = _functions(task.file(declared.EMULATIONS_FILE)) if task.file(declared.EMULATIONS_FILE).is_file() else set()
        for design in spec.design:
            if design.reference is not None:
                assert design.reference in reference, (task.id, design.name)
            if design.emulation is not None:
                assert design.emulation in emulations, (task.id, design.name)
            for path in (design.solution, design.cheat):
                assert path is None or task.file(path).is_file() or (REPO / path).is_file(), (task.id, path)
        for shape in spec.shape:
            if shape.workload is not None:
                task.workload(shape.workload)
            for name in (shape.reference, shape.views):
                assert name is None or name in emulations, (task.id, name)


# -- sweeps ------------------------------------------------------------------------------------------------


def _config_fields(expert: Path, name: str) -> set[str]:
    for node in ast.parse(expert.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    raise AssertionError(f"{expert} has no class {name}")


def test_every_declared_sweep_names_fields_and_workloads_of_its_expert() -> None:
    swept = [t for t in CATALOG.tasks() if t.file(declared.SWEEP_FILE).is_file()]
    assert len(swept) >= 10
    for task in swept:
        spec = declared.sweep(task)
        fields = _config_fields(task.file("expert.py"), spec.config)
        assert spec.chooser in _functions(task.file("expert.py")), task.id
        for grid in spec.grid:
            named = set(grid.fields) | {k for part in [*grid.together, *grid.skip] for k in part}
            assert named <= fields, (task.id, named - fields)
            for workload in grid.workloads:
                task.workload(workload)


class _Config(NamedTuple):
    block: int
    warps: int
    stages: int = 1


def test_sweep_candidates_follow_the_grid_after_the_current_configuration() -> None:
    spec = declared.SweepSpec.model_validate(
        {
            "about": "x",
            "grid": [
                {
                    "fields": {"block": [32, 64, 128], "warps": [4, 8]},
                    "skip": [{"block": 32, "warps": 8}],
                    "where": ["block <= N"],
                    "together": [{"stages": 2}, {"stages": 3}],
                },
                {"workloads": ["other"], "fields": {"block": [256]}},
            ],
        }
    )
    found = candidates(spec, _Config, _Config(64, 4, 2), Workload(name="w", axes={"N": 64}))
    assert found[0] == _Config(64, 4, 2)  # the current configuration first, once
    # block 128 fails `where`, (32, 8) is skipped, the other grid is another workload's
    assert found[1:] == [_Config(32, 4, 2), _Config(32, 4, 3), _Config(64, 4, 3), _Config(64, 8, 2), _Config(64, 8, 3)]
    wrong = declared.SweepSpec.model_validate({"about": "x", "grid": [{"fields": {"tile": [1]}}]})
    with pytest.raises(UsageError, match="tile"):
        candidates(wrong, _Config, _Config(64, 4), Workload(name="w", axes={}))


@pytest.mark.slow
def test_a_sweep_checks_its_candidates_on_the_cpu() -> None:
    args = ("--device", "cpu", "--limit", "2", "--workload", "smoke_m1_k96_n48", "--json")
    result = cli("bench", "sweep", "splitk_gemm", *args)
    assert result.returncode == 0, result.stderr
    (only,) = json.loads(result.stdout)
    assert only["workload"] == "smoke_m1_k96_n48" and only["current_ok"]
    assert len(only["rows"]) == 2 and only["rows"][0]["current"]
    assert all(row["ratio"] < 1 and "ms" not in row for row in only["rows"])  # checked, not timed, on the CPU


def test_a_task_without_a_sweep_is_a_one_line_usage_error() -> None:
    result = runner.invoke(app, ["bench", "sweep", "rmsnorm_bwd", "--device", "cpu", "--list"])
    assert result.exit_code == 2
    assert "declares no sweep" in result.output and len(result.output.strip().splitlines()) == 1


# -- scoring ----------------------------------------------------------------------------------------------


def test_a_bit_exact_rule_scores_any_difference_as_infinitely_far() -> None:
    rule = CompareRule(atol=0.0, rtol=0.0)
    same = torch.arange(6, dtype=torch.float32)
    assert rule_ratio(same, same.clone(), rule, None) == (0.0, True)
    ratio, ok = rule_ratio(same + torch.tensor([0, 0, 0, 0, 0, 1.0]), same, rule, None)
    assert math.isinf(ratio) and not ok


def test_a_matrix_rule_scores_the_error_over_its_bound() -> None:
    rule = CompareRule(matrix_rel_fro=1e-2)
    oracle = torch.ones(4, 4, dtype=torch.float64)
    ratio, ok = rule_ratio(oracle * 1.005, oracle, rule, None)
    assert ratio == pytest.approx(0.5) and ok
